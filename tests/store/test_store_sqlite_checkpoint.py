"""The SQLite store's WAL (and hub.db's) is checkpointed by a thread of its own, not by writes
on the loop.

Nothing here times anything: the tests wait (bounded) for the thread to have done a round,
then ask SQLite what is left to copy.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from bridge.hub.storage import HubDatabase
from bridge.store import open_store
from bridge.store.sqlite import SqliteStore
from bridge.store.sqlite.checkpoint import Checkpointer
from bridge.store.sqlite.connection import connect

WAIT = 10.0
"""Upper bound for the thread's first rounds; a passing run waits a few milliseconds."""


def _rounds_done(checkpointer: Checkpointer, rounds: int) -> bool:
    give_up = time.monotonic() + WAIT
    while checkpointer.checkpoints < rounds:
        if time.monotonic() > give_up:
            return False
        time.sleep(0.005)
    return True


def test_the_thread_copies_the_wal_without_the_writer_checkpointing(tmp_path: Path) -> None:
    path = str(tmp_path / "wal.db")
    db = connect(path)
    db.execute("PRAGMA wal_autocheckpoint = 0")  # the writer itself never checkpoints
    db.execute("CREATE TABLE t (x TEXT)")
    checkpointer = Checkpointer(path, interval=0.001)
    checkpointer.start()
    try:
        for i in range(200):
            db.execute("INSERT INTO t VALUES (?)", (f"row {i}" * 20,))
        rounds = checkpointer.checkpoints
        assert _rounds_done(checkpointer, rounds + 2)  # a whole round after the last write
        other = sqlite3.connect(path)
        _, frames, copied = other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        other.close()
        assert frames > 0 and copied == frames  # all was already in the database file
    finally:
        checkpointer.stop()
        db.close()
    assert not any(thread.name.startswith("sqlite-checkpoint") for thread in threading.enumerate())


async def test_each_file_store_runs_one_thread_until_it_closes(tmp_path: Path) -> None:
    def running() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("sqlite-checkpoint")]

    before = running()
    async with open_store(f"sqlite:///{tmp_path}/bridge.db") as store:
        assert isinstance(store, SqliteStore)
        assert len(running()) == len(before) + 1
        async with open_store("sqlite:///:memory:"):
            assert len(running()) == len(before) + 1  # nothing to checkpoint in memory
    assert running() == before


def test_the_hub_database_has_its_thread_too_until_it_closes(tmp_path: Path) -> None:
    """`hub.db` takes the per-message writes of every chat: its WAL is copied back off the
    loop as the relay store's is (the commit that crossed the threshold took 30 ms)."""
    def running() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("sqlite-checkpoint")]

    ours = f"sqlite-checkpoint {tmp_path / 'hub.db'}"  # other tests' threads may come and go
    hub_db = HubDatabase.in_data_dir(tmp_path)
    assert running().count(ours) == 1
    hub_db.close()
    assert ours not in running()
