"""Discord: one bot account (or some of its shards) through discord.py.

The names below are imported on first use (`lazy_names`), so reading this platform's
`cli.py` (`bcn-bridge --help`) does not load the platform library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bridge.core.registry import lazy_names

if TYPE_CHECKING:
    from adapters.discord.adapter import DiscordAdapter
    from adapters.discord.config import DiscordAccountConfig

__all__ = ["DiscordAccountConfig", "DiscordAdapter"]

__getattr__ = lazy_names(__name__, DiscordAdapter="adapter", DiscordAccountConfig="config")
