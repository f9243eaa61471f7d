"""Logging setup for the commands, with a last line of defence against leaked secrets.

Code is written never to log a token, but a library's exception text can still carry one
(e.g. a URL with a bot token in it). Every secret the config holds is registered here and
masked in every record that reaches a handler.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable

_MASK = "«redacted»"


class RedactSecrets(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def add(self, values: Iterable[str | None]) -> None:
        self.secrets.update(v for v in values if v and len(v) >= 6)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        redacted = message
        for secret in self.secrets:
            if secret in redacted:
                redacted = redacted.replace(secret, _MASK)
        if record.exc_info and record.exc_info[1] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            if any(secret in text for secret in self.secrets):
                for secret in self.secrets:
                    text = text.replace(secret, _MASK)
                redacted = f"{redacted}\n{text}"
                record.exc_info = None
                record.exc_text = None
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


REDACTOR = RedactSecrets()


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
