"""Logging setup, and the one place that keeps secrets out of every log line.

Code is written never to log a secret, but libraries do: the Telegram Bot API puts the bot
token in every URL, and httpx logs URLs at INFO. `REDACTOR` masks every registered secret,
and anything matching a registered secret *shape*, in each record it sees. It sits on the
root handler that `setup_logging` installs and, via `protect_loggers`, directly on library
loggers, so the masking holds whichever handler (pytest's, an embedding app's) prints them.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable, Mapping
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, TextIO

REDACTED = "<redacted>"
LOG_FORMATS = ("text", "json")


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


_CONTEXT: ContextVar[Mapping[str, str]] = ContextVar(
    "bcn_bridge_log_context", default=MappingProxyType({})
)
"""Ids of the message being handled now (chat, binding, message, run, lane)."""

_STANDARD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message", "asctime", "taskName",
}


class log_context:  # a function's name: it is used as one, `with log_context(...):`
    """Every log line written inside the block carries these ids (None values are left out),
    so the lines of one message's path can be found together in JSON logs.

    A class, not a `@contextmanager` generator: it wraps every relayed message both ways,
    and a generator-based context manager costs several times as much per block."""

    __slots__ = ("_fields", "_token")

    def __init__(self, **fields: Any) -> None:
        self._fields = fields
        self._token: Token[Mapping[str, str]] | None = None

    def __enter__(self) -> None:
        self._token = _CONTEXT.set({**_CONTEXT.get(), **_strings(self._fields)})

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _CONTEXT.reset(self._token)
            self._token = None


def set_log_context(**fields: Any) -> None:
    """`log_context` for the rest of the current task (a worker that serves one chat)."""
    _CONTEXT.set({**_CONTEXT.get(), **_strings(fields)})


def _strings(fields: dict[str, Any]) -> dict[str, str]:
    return {key: str(value) for key, value in fields.items() if value is not None}


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, the message-path ids of
    `log_context` and any `extra=` fields, and the traceback as one string — every string
    passed through the redactor, so a secret cannot reach the log this way either."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        for key, value in {**_CONTEXT.get(), **_extras(record)}.items():
            line.setdefault(key, redact(value) if isinstance(value, str) else _plain(value))
        if record.exc_info and record.exc_info[1] is not None:
            line["exception"] = redact(record.exc_text or self.formatException(record.exc_info))
        elif record.exc_text:
            line["exception"] = redact(record.exc_text)
        return json.dumps(line, ensure_ascii=False)


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD_FIELDS}


def _plain(value: Any) -> Any:
    """A value `json.dumps` takes as it is, or its redacted text."""
    if value is None or isinstance(value, bool | int | float):
        return value
    return redact(str(value))


_format = "text"


def log_format() -> str:
    """The format `setup_logging` chose for this process ("text" or "json")."""
    return _format


def announce(text: str, *, stream: TextIO | None = None, level: int = logging.INFO) -> None:
    """Lines meant for the person at the terminal (a banner, a URL, config errors): printed
    as they are, or as one JSON object each when the logs are JSON, so every line of the
    output is in one format."""
    out = stream or sys.stdout
    if _format == "json":
        for line in (part for part in text.splitlines() if part.strip()):
            record = logging.LogRecord("bcn-bridge", level, "", 0, line.strip(), (), None)
            print(JsonFormatter().format(record), file=out, flush=True)
    else:
        print(text, file=out, flush=True)


def setup_logging(level: str = "INFO", fmt: str = "text") -> None:
    """Log to stderr in `fmt` ("text" for people, "json" for log collectors), secrets masked."""
    global _format
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, got {fmt!r}")
    _format = fmt
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
        logging.captureWarnings(True)  # warnings.warn lines would be plain text on stderr
        sys.excepthook = _log_uncaught
    else:
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s", "%H:%M:%S")
        )
    handler.addFilter(REDACTOR)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("aiohttp.access", "httpx", "telegram.ext", "hpack"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


def _log_uncaught(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
    logging.getLogger("bcn-bridge").critical("uncaught exception", exc_info=(kind, exc, tb))
