"""Logging setup, and the one place that keeps secrets out of every log line.

Code is written never to log a secret, but libraries do: the Telegram Bot API puts the bot
token in every URL, and httpx logs URLs at INFO. `REDACTOR` masks every registered secret,
and anything matching a registered secret *shape*, in each record it sees. It sits on the
root handler that `setup_logging` installs and, via `protect_loggers`, directly on library
loggers, so the masking holds whichever handler (pytest's, an embedding app's) prints them.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable

REDACTED = "<redacted>"


class SecretRedactor(logging.Filter):
    def __init__(self) -> None:
        super().__init__("bcn-bridge-secret-redactor")
        self._secrets: set[str] = set()
        self._patterns: list[re.Pattern[str]] = []

    def add(self, secrets: Iterable[str | None]) -> None:
        """Register secret values (short strings are ignored: they would mask ordinary text)."""
        self._secrets.update(s for s in secrets if s and len(s) >= 6)

    def add_pattern(self, pattern: re.Pattern[str]) -> None:
        """Register the shape of a secret (e.g. a bot token) to mask even unregistered ones."""
        if pattern not in self._patterns:
            self._patterns.append(pattern)

    def redact(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, REDACTED)
        for pattern in self._patterns:
            text = pattern.sub(REDACTED, text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets and not self._patterns:
            return True
        message = record.getMessage()
        cleaned = self.redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        if record.exc_info and record.exc_info[1] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            cleaned_text = self.redact(text)
            if cleaned_text != text:
                record.exc_text = cleaned_text
        return True


REDACTOR = SecretRedactor()


def redact(text: str) -> str:
    """A string safe to log: no registered secret and nothing shaped like one."""
    return REDACTOR.redact(text)


def protect_loggers(prefixes: Iterable[str]) -> None:
    """Filter these loggers (and their existing children) through `REDACTOR`.

    A filter on a logger only sees records created by that very logger, so each existing
    child logger gets it too, not just the parents.
    """
    prefixes = tuple(prefixes)
    names = [
        name for name in list(logging.root.manager.loggerDict)
        if name.split(".", 1)[0] in prefixes
    ]
    for name in {*names, *prefixes}:
        logger = logging.getLogger(name)
        if REDACTOR not in logger.filters:
            logger.addFilter(REDACTOR)


def setup_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s", "%H:%M:%S")
    )
    handler.addFilter(REDACTOR)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("aiohttp.access", "httpx", "telegram.ext", "hpack"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
