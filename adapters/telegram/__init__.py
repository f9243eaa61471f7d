"""Telegram: bot accounts through python-telegram-bot, polling or webhook.

The names below are imported on first use (`lazy_names`), so reading this platform's
`cli.py` (`bcn-bridge --help`) does not load the platform library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bridge.core.registry import lazy_names

if TYPE_CHECKING:
    from adapters.telegram.adapter import TelegramAdapter
    from adapters.telegram.config import TelegramAccountConfig

__all__ = ["TelegramAccountConfig", "TelegramAdapter"]

__getattr__ = lazy_names(__name__, TelegramAdapter="adapter", TelegramAccountConfig="config")
