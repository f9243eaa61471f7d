"""Slack: one app per workspace through slack-bolt, over Socket Mode or the Events API.

The names below are imported on first use (`lazy_names`), so reading this platform's
`cli.py` (`bcn-bridge --help`) does not load the platform library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bridge.core.registry import lazy_names

if TYPE_CHECKING:
    from adapters.slack.adapter import SlackAdapter
    from adapters.slack.config import SlackAccountConfig

__all__ = ["SlackAccountConfig", "SlackAdapter"]

__getattr__ = lazy_names(__name__, SlackAdapter="adapter", SlackAccountConfig="config")
