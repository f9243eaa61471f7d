import socket
import sqlite3
from pathlib import Path

import pytest

from bridge.store import StoreUnavailable, StoreUrl, open_store, parse_store_url
from bridge.store.memory import MemoryStore
from bridge.store.redis import RedisUrl
from bridge.store.sqlite import SqliteStore


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("memory://", StoreUrl("memory")),
        ("sqlite:///data/bridge.db", StoreUrl("sqlite", "data/bridge.db")),
        ("sqlite:////var/lib/bcn/bridge.db", StoreUrl("sqlite", "/var/lib/bcn/bridge.db")),
        ("sqlite:///:memory:", StoreUrl("sqlite", ":memory:")),
    ],
)
def test_urls_name_backend_and_path(url: str, expected: StoreUrl) -> None:
    assert parse_store_url(url) == expected


@pytest.mark.parametrize("url", ["mysql://db/x", "ftp://x", "bridge.db", "", "sqlite:/x.db"])
def test_unknown_or_missing_scheme_names_the_supported_ones(url: str) -> None:
    with pytest.raises(ValueError, match=r"memory://.*sqlite:///"):
        open_store(url)


@pytest.mark.parametrize("url", ["sqlite://bridge.db", "sqlite:///", "memory://somewhere"])
def test_malformed_urls_say_how_to_write_them(url: str) -> None:
    with pytest.raises(ValueError, match=r"sqlite:///|takes no path"):
        open_store(url)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://127.0.0.1:6379/0", RedisUrl("127.0.0.1")),
        ("redis://cache", RedisUrl("cache")),
        ("redis://cache:6380/", RedisUrl("cache", 6380)),
        ("redis://:s3cret@cache:6379/2", RedisUrl("cache", db=2, password="s3cret")),
        ("redis://bridge:p%40ss@cache/1", RedisUrl("cache", db=1, username="bridge",
                                                   password="p@ss")),
        ("redis://[::1]:7000/3?prefix=team-a", RedisUrl("::1", 7000, 3, prefix="team-a")),
        ("rediss://cache.example:6380/4", RedisUrl("cache.example", 6380, 4, tls=True)),
        ("rediss://cache/0?ssl_ca_certs=/etc/ca.pem&ssl_cert_reqs=required",
         RedisUrl("cache", tls=True, ssl_ca_certs="/etc/ca.pem", ssl_cert_reqs="required")),
    ],
)
def test_redis_urls_name_server_database_and_prefix(url: str, expected: RedisUrl) -> None:
    parsed = parse_store_url(url)
    assert parsed == StoreUrl(url.split("://")[0], redis=expected)
    assert parsed.redis is not None and parsed.redis.prefix == expected.prefix


def test_the_default_prefix_and_a_password_free_repr() -> None:
    parsed = parse_store_url("redis://:hunter2@cache:6379/0").redis
    assert parsed is not None and parsed.prefix == "bcn-bridge"
    assert "hunter2" not in repr(parsed) and parsed.where == "cache:6379/0"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://:hunter2@/0", "name the Redis host"),
        ("redis://:hunter2@cache:port/0", "port must be a number"),
        ("redis://:hunter2@cache/zero", "the path is the database number"),
        ("redis://:hunter2@cache/0?prefix=a*b", "prefix must be"),
        ("redis://:hunter2@cache/0?prefix=", "prefix must be"),
        ("redis://:hunter2@cache/0?db=1", "unknown option 'db'; a redis URL takes prefix"),
        ("redis://:hunter2@cache/0?ssl_ca_certs=/ca.pem", "unknown option 'ssl_ca_certs'"),
        ("rediss://:hunter2@cache/0?ssl_cert_reqs=maybe", "ssl_cert_reqs must be one of"),
        ("redis://:hunter2@cache/0?prefix=a&prefix=b", "prefix is given twice"),
        ("redis://:hunter2@cache/0#x", "no #fragment"),
    ],
)
def test_bad_redis_urls_say_why_without_the_password(url: str, expected: str) -> None:
    with pytest.raises(ValueError, match=expected) as caught:
        open_store(url)
    assert "hunter2" not in str(caught.value) and ":***@" in str(caught.value)


async def test_an_unreachable_redis_is_one_clear_error_naming_host_and_port() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nobody listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(StoreUnavailable) as caught:
        await open_store(f"redis://:hunter2@127.0.0.1:{port}/0")
    message = str(caught.value)
    assert f"cannot open the Redis store at 127.0.0.1:{port}/0" in message
    assert "hunter2" not in message
    assert isinstance(caught.value, OSError)  # what `bcn-bridge run` reports in one line
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


async def test_a_password_the_server_refuses_is_never_shown(redis_server: str) -> None:
    url = redis_server.replace("redis://", "redis://intruder:hunter2-wrong@", 1)
    with pytest.raises(StoreUnavailable) as caught:
        await open_store(url)
    assert "hunter2" not in str(caught.value)
    assert "cannot open the Redis store at" in str(caught.value)


async def test_await_then_close(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path}/a.db")
    assert isinstance(store, SqliteStore)
    await store.close()
    with pytest.raises(sqlite3.ProgrammingError):
        await store.conversations.get("x")


async def test_async_with_closes_on_exit(tmp_path: Path) -> None:
    async with open_store(f"sqlite:///{tmp_path}/a.db") as store:
        assert await store.conversations.get("x") is None
    with pytest.raises(sqlite3.ProgrammingError):
        await store.conversations.get("x")


async def test_memory_urls_open_independent_stores() -> None:
    async with open_store("memory://") as first, open_store("memory://") as second:
        assert isinstance(first, MemoryStore)
        assert first.conversations is not second.conversations


async def test_sqlite_creates_parent_directories(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "bridge.db"
    async with open_store(f"sqlite:///{path}"):
        pass
    assert path.is_file()


async def test_relative_sqlite_path_is_relative_to_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    async with open_store("sqlite:///data/bridge.db"):
        pass
    assert (tmp_path / "data" / "bridge.db").is_file()


async def test_sqlite_in_memory_works() -> None:
    async with open_store("sqlite:///:memory:") as store:
        assert await store.conversations.find() == []


@pytest.mark.parametrize(
    "url", ["redis://user:hunter2@cache:6379/x", "postgres://app:hunter2@db/bridge"]
)
def test_errors_never_show_a_password(url: str) -> None:
    with pytest.raises(ValueError) as caught:
        open_store(url)
    assert "hunter2" not in str(caught.value)
    assert ":***@" in str(caught.value)
