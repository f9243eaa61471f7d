"""Finding a real redis-server for the store tests, or starting a private one.

The Redis store is tested against a real server, never a fake: `REDIS_URL` (default
redis://127.0.0.1:6379/0) if it answers, else a private `redis-server` started on a free port
in a temporary directory (no persistence) and stopped when the session ends. With neither,
the tests fail saying how to get one, so a missing server cannot pass for a green run;
BCN_BRIDGE_SKIP_REDIS=1 skips them instead, on purpose.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest
import redis
import redis.asyncio

from bridge.store.opening import redacted

DEFAULT_URL = "redis://127.0.0.1:6379/0"
SKIP_VARIABLE = "BCN_BRIDGE_SKIP_REDIS"
START_SECONDS = 10.0


def skip_reason() -> str | None:
    if os.environ.get(SKIP_VARIABLE) == "1":
        return f"{SKIP_VARIABLE}=1: the Redis store tests are skipped on purpose"
    return None


def answers(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=2)
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def private_server(binary: str) -> Iterator[str]:
    """A redis-server of our own on 127.0.0.1, nothing saved; yields its URL."""
    with tempfile.TemporaryDirectory(prefix="bcn-redis-") as folder:
        port = _free_port()
        process = subprocess.Popen(
            [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
             "--appendonly", "no", "--dir", folder, "--daemonize", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        )  # fmt: skip
        url = f"redis://127.0.0.1:{port}/0"
        try:
            deadline = time.monotonic() + START_SECONDS
            while not answers(url):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the private redis-server on port {port} did not start")
                time.sleep(0.05)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def some_server() -> Iterator[str]:
    """The URL of a Redis that answers; raises LookupError saying what to do if none can be
    found or started."""
    url = os.environ.get("REDIS_URL") or DEFAULT_URL
    if answers(url):
        yield url
        return
    binary = shutil.which("redis-server")
    if binary is None:
        raise LookupError(
            f"no Redis answers at {redacted(url)} and no redis-server is on PATH: install"
            " redis-server (e.g. `apt-get install redis-server`) or start one and set REDIS_URL;"
            f" {SKIP_VARIABLE}=1 skips the Redis store tests"
        )
    with private_server(binary) as private:
        yield private


def with_prefix(url: str, prefix: str | None = None) -> tuple[str, str]:
    """The URL with a fresh unique `?prefix=` (or the one given), and that prefix."""
    prefix = prefix or f"test-{uuid.uuid4().hex[:12]}"
    parts = urlsplit(url)
    query = [(name, value) for name, value in parse_qsl(parts.query) if name != "prefix"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("prefix", prefix)]))), prefix


def with_db(url: str, db: int) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{db}"))


async def drop_prefix(client: redis.asyncio.Redis, prefix: str) -> int:
    """Delete every key under `prefix:` (SCAN in chunks, never KEYS)."""
    dropped = 0
    batch: list[str] = []
    async for key in client.scan_iter(match=f"{prefix}:*", count=500):
        batch.append(key)
        if len(batch) >= 500:
            dropped += await client.delete(*batch)
            batch = []
    if batch:
        dropped += await client.delete(*batch)
    return dropped


@contextmanager
def server_or_skip() -> Iterator[str]:
    """`some_server()` for a fixture: skipped only on purpose (BCN_BRIDGE_SKIP_REDIS=1),
    failed when no server can be found, so a missing Redis never passes for green."""
    if (reason := skip_reason()) is not None:
        pytest.skip(reason)
    try:
        with some_server() as url:
            yield url
    except LookupError as missing:
        pytest.fail(str(missing), pytrace=False)


@asynccontextmanager
async def prefixed(url: str) -> AsyncIterator[str]:
    """The URL with a fresh key prefix; every key written under it is deleted on exit."""
    url, prefix = with_prefix(url)
    try:
        yield url
    finally:
        client = redis.asyncio.Redis.from_url(url.partition("?")[0])
        try:
            await drop_prefix(client, prefix)
        finally:
            await client.aclose()
