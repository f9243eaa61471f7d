"""Keep Discord secrets out of every log line, with the bridge's one secret redactor.

The bot token travels in a header, but webhook and interaction tokens are part of their
URLs (`/webhooks/<id>/<token>`, `/interactions/<id>/<token>/callback`), and discord.py logs
those URLs at DEBUG. The bot token is registered with `bridge.logs.REDACTOR`, which also
masks anything shaped like a bot token or a URL token, and discord.py's loggers are filtered.
"""

from __future__ import annotations

import re

from bridge.logs import REDACTED, REDACTOR, protect_loggers, redact

BOT_TOKEN = re.compile(r"\b[A-Za-z0-9_-]{23,28}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,}")
"""The shape of a Discord bot token: `<base64 user id>.<timestamp>.<hmac>`."""

URL_TOKEN = re.compile(r"(?<=/)[A-Za-z0-9_-]{60,}")
"""A webhook (68 characters) or interaction token as a URL path segment."""

_LOGGERS = ("discord",)

__all__ = ["BOT_TOKEN", "REDACTED", "URL_TOKEN", "protect_tokens", "redact"]


def protect_tokens(*secrets: str) -> None:
    """Register tokens and make sure every logger that can see them is filtered."""
    REDACTOR.add(secrets)
    REDACTOR.add_pattern(BOT_TOKEN)
    REDACTOR.add_pattern(URL_TOKEN)
    protect_loggers(_LOGGERS)
