"""`redis://` and `rediss://` store URLs, checked without opening anything.

    redis://[[user]:password@]host[:port][/db][?prefix=name]
    rediss://…                     (TLS; also ?ssl_ca_certs=/path/ca.pem, ?ssl_cert_reqs=none)

This module imports nothing from redis-py, so checking a config stays fast; the client is
only imported when a store is actually opened.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit

DEFAULT_PORT = 6379
DEFAULT_PREFIX = "bcn-bridge"

# No glob characters (a prefix is used in SCAN patterns) and nothing that needs quoting.
_PREFIX = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_DB = re.compile(r"\d{1,5}")
_CERT_REQS = ("none", "optional", "required")
_TLS_OPTIONS = ("ssl_ca_certs", "ssl_cert_reqs")


@dataclass(frozen=True, slots=True)
class RedisUrl:
    """Where a Redis store lives. The password is left out of `repr`, so logging the
    parsed URL cannot leak it."""

    host: str
    port: int = DEFAULT_PORT
    db: int = 0
    tls: bool = False
    prefix: str = DEFAULT_PREFIX
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ssl_ca_certs: str | None = None
    ssl_cert_reqs: str | None = None

    @property
    def where(self) -> str:
        """`host:port/db`, for messages (never the password)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}/{self.db}"


def parse_redis_url(url: str, shown: str) -> RedisUrl:
    """Check a `redis://` or `rediss://` URL; `shown` is the URL with its password masked,
    the only form any error message quotes."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError(f"store URL {shown!r}: the port must be a number") from None
    tls = parts.scheme == "rediss"
    if not parts.hostname:
        raise ValueError(f"store URL {shown!r}: name the Redis host, e.g. redis://127.0.0.1:6379/0")
    db_text = parts.path.removeprefix("/")
    if db_text and not _DB.fullmatch(db_text):
        raise ValueError(
            f"store URL {shown!r}: the path is the database number, e.g. redis://host:6379/0"
        )
    if parts.fragment:
        raise ValueError(f"store URL {shown!r}: a Redis URL takes no #fragment")
    options = _options(parts.query, tls, shown)
    return RedisUrl(
        host=parts.hostname,
        port=DEFAULT_PORT if port is None else port,
        db=int(db_text or 0),
        tls=tls,
        prefix=options.get("prefix", DEFAULT_PREFIX),
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password is not None else None,
        ssl_ca_certs=options.get("ssl_ca_certs"),
        ssl_cert_reqs=options.get("ssl_cert_reqs"),
    )


def _options(query: str, tls: bool, shown: str) -> dict[str, str]:
    allowed = ("prefix", *_TLS_OPTIONS) if tls else ("prefix",)
    options: dict[str, str] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name not in allowed:
            raise ValueError(
                f"store URL {shown!r}: unknown option {name!r}; a {'rediss' if tls else 'redis'}"
                f" URL takes {', '.join(allowed)}"
            )
        if name in options:
            raise ValueError(f"store URL {shown!r}: {name} is given twice")
        options[name] = value
    prefix = options.get("prefix")
    if prefix is not None and not _PREFIX.fullmatch(prefix):
        raise ValueError(
            f"store URL {shown!r}: prefix must be 1-64 letters, digits or '_.:-'"
        )
    cert_reqs = options.get("ssl_cert_reqs")
    if cert_reqs is not None and cert_reqs not in _CERT_REQS:
        raise ValueError(
            f"store URL {shown!r}: ssl_cert_reqs must be one of {', '.join(_CERT_REQS)}"
        )
    return options
