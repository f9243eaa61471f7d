"""Keep bot tokens out of every log line.

The Bot API puts the token in the URL path (`/bot<token>/sendMessage`), and both httpx
(`HTTP Request: POST <url>` at INFO) and python-telegram-bot (`Set Bot API URL` at DEBUG)
log that URL. A filter on the loggers that emit those records rewrites them before any
handler sees them; it also hides the configured tokens wherever else they turn up.
"""

from __future__ import annotations

import logging
import re

BOT_TOKEN = re.compile(r"\d{3,}:[A-Za-z0-9_-]{20,}")
"""The shape of a Telegram bot token: `<bot id>:<secret>`."""

REDACTED = "<redacted>"

_URL_LOGGERS = ("httpx", "httpcore", "telegram")


class TokenRedactor(logging.Filter):
    """Replaces bot tokens (known ones and anything shaped like one) in log records."""

    def __init__(self) -> None:
        super().__init__("bcn-bridge-token-redactor")
        self._secrets: set[str] = set()

    def add_secret(self, secret: str) -> None:
        if secret:
            self._secrets.add(secret)

    def redact(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            text = text.replace(secret, REDACTED)
        return BOT_TOKEN.sub(REDACTED, text)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = self.redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            if self.redact(str(exc)) != str(exc):
                record.exc_text = self.redact(logging.Formatter().formatException(record.exc_info))
        return True


REDACTOR = TokenRedactor()


def protect_tokens(*secrets: str) -> None:
    """Register tokens and make sure every logger that can see them is filtered.

    Filters on a logger only see records created by that very logger, so the redactor
    is attached to each existing httpx/httpcore/telegram logger, not just their parents.
    """
    for secret in secrets:
        REDACTOR.add_secret(secret)
    names = [
        name
        for name in list(logging.root.manager.loggerDict)
        if name.split(".", 1)[0] in _URL_LOGGERS
    ]
    for name in {*names, *_URL_LOGGERS}:
        logger = logging.getLogger(name)
        if REDACTOR not in logger.filters:
            logger.addFilter(REDACTOR)


def redact(text: str) -> str:
    """A string safe to log: no configured token and nothing shaped like one."""
    return REDACTOR.redact(text)
