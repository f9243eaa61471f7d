"""`open_store(url)`: the one way to get a store, chosen by URL scheme.

Supported: `memory://` (a fresh, empty store), `sqlite:///path.db` — three slashes, then
the path, as SQLAlchemy spells it: `sqlite:///data/bridge.db` is relative to the working
directory, `sqlite:////var/lib/bcn/bridge.db` absolute, `sqlite:///:memory:` a private
in-memory database — and `redis://[:password@]host:port/db` (`rediss://` for TLS,
`?prefix=name` for the key prefix), the store several instances share.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bridge.store.base import Store
from bridge.store.memory import MemoryStore
from bridge.store.redis.url import RedisUrl, parse_redis_url
from bridge.store.sqlite import SqliteStore

SUPPORTED = ("memory://", "sqlite:///path.db", "redis://host:port/db")


class StoreUnavailable(ConnectionError):
    """The store's server could not be reached or refused us; the message names where it
    is (never a password). An OSError, so `bcn-bridge run` reports it in one line."""


@dataclass(frozen=True, slots=True)
class StoreUrl:
    """A checked store URL: which backend, and (for SQLite) which file or (for Redis) which
    server, database and key prefix."""

    scheme: str
    path: str | None = None
    redis: RedisUrl | None = None


def parse_store_url(url: str) -> StoreUrl:
    """Check a store URL without opening anything; a bad one is a ValueError saying why.

    Messages quote the URL with its password masked, so they are safe to log.
    """
    if not isinstance(url, str) or "://" not in url:
        raise ValueError(
            f"store URL {redacted(url)!r} has no scheme; supported: {', '.join(SUPPORTED)}"
        )
    scheme, rest = url.split("://", 1)
    raw, url = url, redacted(url)
    if scheme == "memory":
        if rest:
            raise ValueError(f"store URL {url!r}: memory:// takes no path")
        return StoreUrl("memory")
    if scheme == "sqlite":
        if not rest.startswith("/") or rest == "/":
            raise ValueError(
                f"store URL {url!r}: write sqlite:///relative.db or sqlite:////absolute.db"
                " (three slashes, then the path)"
            )
        return StoreUrl("sqlite", rest[1:])
    if scheme in ("redis", "rediss"):
        return StoreUrl(scheme, redis=parse_redis_url(raw, url))
    raise ValueError(
        f"store URL {url!r}: unknown scheme {scheme!r}; supported: {', '.join(SUPPORTED)}"
    )


def redacted(url: object) -> str:
    """The URL with any password masked, safe to show in an error message or a log."""
    if not isinstance(url, str):
        return repr(url)
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<unreadable URL>"
    if password is None:
        return url
    netloc = parts.netloc.replace(f":{password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def open_store(url: str) -> OpeningStore:
    """Open the store a URL names; await the result or use it with `async with`.

    The URL is checked at once, so a bad one raises here, before anything is opened.
    """
    return OpeningStore(parse_store_url(url))


class OpeningStore:
    """Both an awaitable that yields the open store and an async context manager closing it."""

    __slots__ = ("_store", "_url")

    def __init__(self, url: StoreUrl) -> None:
        self._url = url
        self._store: Store | None = None

    def __await__(self) -> Generator[Any, None, Store]:
        return self._open().__await__()

    async def __aenter__(self) -> Store:
        self._store = await self._open()
        return self._store

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._store is not None:
            await self._store.close()

    async def _open(self) -> Store:
        if self._url.scheme == "sqlite":
            assert self._url.path is not None
            return SqliteStore(self._url.path)
        if self._url.redis is not None:
            # Imported here: redis-py is only loaded when a Redis store is opened.
            from bridge.store.redis.store import open_redis_store

            return await open_redis_store(self._url.redis)
        return MemoryStore()
