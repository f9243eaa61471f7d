import sqlite3
from pathlib import Path

import pytest

from bridge.store import StoreUrl, open_store, parse_store_url
from bridge.store.memory import MemoryStore
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


def test_redis_says_it_is_not_implemented_yet() -> None:
    with pytest.raises(NotImplementedError, match="not implemented yet"):
        open_store("redis://127.0.0.1:6379/0")


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
    "url", ["redis://user:hunter2@cache:6379/0", "postgres://app:hunter2@db/bridge"]
)
def test_errors_never_show_a_password(url: str) -> None:
    with pytest.raises((ValueError, NotImplementedError)) as caught:
        open_store(url)
    assert "hunter2" not in str(caught.value)
    assert ":***@" in str(caught.value)
