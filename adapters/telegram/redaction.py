"""Keep bot tokens out of every log line, with the bridge's one secret redactor.

The Bot API puts the token in the URL path (`/bot<token>/sendMessage`), and both httpx
(`HTTP Request: POST <url>` at INFO) and python-telegram-bot (`Set Bot API URL` at DEBUG)
log that URL. The tokens are registered with `bridge.logs.REDACTOR`, which also masks
anything shaped like a token, and the loggers that emit those records are filtered.
"""

from __future__ import annotations

import re

from bridge.logs import REDACTED, REDACTOR, protect_loggers, redact

BOT_TOKEN = re.compile(r"\d{3,}:[A-Za-z0-9_-]{20,}")
"""The shape of a Telegram bot token: `<bot id>:<secret>`."""

_URL_LOGGERS = ("httpx", "httpcore", "telegram")

__all__ = ["BOT_TOKEN", "REDACTED", "protect_tokens", "redact"]


def protect_tokens(*secrets: str) -> None:
    """Register tokens and make sure every logger that can see them is filtered."""
    REDACTOR.add(secrets)
    REDACTOR.add_pattern(BOT_TOKEN)
    protect_loggers(_URL_LOGGERS)
