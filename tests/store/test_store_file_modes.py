"""Files that hold secrets or people's messages are created readable by their owner alone.

Checked on real files, with a umask that would otherwise leave them readable by everyone on
the machine (0644): the bridge's SQLite store and its WAL files, the hub's `hub.db` (which
keeps the pseudonym key), a bot's token file and its history mirror.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.bcn.bot.history import HistoryStore
from bridge.bcn.bot.token_file import save_token
from bridge.hub import Hub, HubConfig
from bridge.store.sqlite import SqliteStore

OWNER_ONLY = 0o600


@pytest.fixture(autouse=True)
def permissive_umask() -> Iterator[None]:
    """A umask that lets group and others read new files, as many servers have."""
    previous = os.umask(0o002)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def sqlite_files(path: Path) -> list[Path]:
    """The database and the WAL files SQLite made beside it (they must exist to be checked)."""
    files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
    assert all(file.exists() for file in files), [file.name for file in path.parent.iterdir()]
    return files


async def test_the_bridge_store_and_its_wal_are_private(tmp_path: Path) -> None:
    path = tmp_path / "data" / "bridge.db"
    store = SqliteStore(str(path))  # the migrations write: the WAL files exist
    try:
        assert {file.name: mode(file) for file in sqlite_files(path)} == {
            file.name: OWNER_ONLY for file in sqlite_files(path)
        }
    finally:
        await store.close()


async def test_an_existing_database_keeps_its_mode(tmp_path: Path) -> None:
    """The operator's choice for a file that exists is not overridden (only new files)."""
    path = tmp_path / "bridge.db"
    path.touch(mode=0o640)
    os.chmod(path, 0o640)
    store = SqliteStore(str(path))
    await store.close()
    assert mode(path) == 0o640


async def test_hub_db_and_its_identity_secret_are_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "hub-data"
    hub = Hub(HubConfig.model_validate({"listen": "127.0.0.1:0", "data_dir": str(data_dir)}))
    await hub.start()
    try:
        assert hub.state is not None
        secret = hub.state.identity_secret.decode()
        files = sqlite_files(data_dir / "hub.db")
        assert {file.name: mode(file) for file in files} == {
            file.name: OWNER_ONLY for file in files
        }
        # The generated pseudonym key lives in hub.db (0600), not in a file of its own.
        assert sorted(path.name for path in data_dir.iterdir()) == [
            "hub.db", "hub.db-shm", "hub.db-wal"
        ]
        stored = hub.state.db.rows("SELECT value FROM meta WHERE key = 'identity_secret'")
        assert stored[0][0] == secret and len(secret) == 64
    finally:
        await hub.stop()


def test_a_bot_token_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "bots" / "helper.token"
    save_token(path, "tok-secret")
    assert mode(path) == OWNER_ONLY


def test_a_bot_history_mirror_is_private(tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    history = HistoryStore(path=path)
    history.record("grp:room", "user", "hello", 1)
    assert path.exists() and mode(path) == OWNER_ONLY
