"""`BatchedWrites` on a real SQLite file: order, chunking, soon-commits, failures, close."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bridge.hub.batched_writes import BatchedWrites
from bridge.store.sqlite.connection import connect


def open_db(tmp_path: Path) -> BatchedWrites:
    db = connect(str(tmp_path / "t.db"))
    db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)")
    return BatchedWrites(db, chunk=100)


def values(writes: BatchedWrites) -> list[tuple[int, str]]:
    return list(writes._db.execute("SELECT k, v FROM t ORDER BY k"))


async def test_statements_commit_in_order_in_chunks_and_the_loop_runs_between(
    tmp_path: Path
) -> None:
    writes = open_db(tmp_path)
    for k in range(250):
        writes.add("INSERT INTO t (k, v) VALUES (?, ?)", (k, "first"))
    for k in range(250):
        writes.add("UPDATE t SET v = ? WHERE k = ?", ("second", k))  # after its insert
    turns = 0

    async def count_turns() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.create_task(count_turns())
    await writes.flush()
    counter.cancel()
    assert values(writes) == [(k, "second") for k in range(250)]
    assert writes.committed == 500 and writes.transactions == 5
    assert turns >= 2  # other tasks ran while the five transactions were committed


async def test_what_is_added_is_committed_on_the_next_turn_without_a_flush(
    tmp_path: Path
) -> None:
    writes = open_db(tmp_path)
    writes.add("INSERT INTO t (k, v) VALUES (?, ?)", (1, "soon"))
    writes.add("INSERT INTO t (k, v) VALUES (?, ?)", (2, "soon"))
    assert writes.pending == 2
    await asyncio.sleep(0)
    assert writes.pending == 0 and writes.transactions == 1
    assert values(writes) == [(1, "soon"), (2, "soon")]


async def test_a_failed_transaction_is_logged_and_later_ones_still_commit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    writes = open_db(tmp_path)
    writes.add("INSERT INTO t (k, v) VALUES (?, ?)", (1, "a"))
    writes.add("INSERT INTO t (k, v) VALUES (?, ?)", (1, "a again"))  # primary key taken
    await writes.flush()
    assert "a transaction of 2 writes failed" in caplog.text
    writes.add("INSERT INTO t (k, v) VALUES (?, ?)", (2, "b"))
    await writes.flush()
    assert values(writes) == [(2, "b")]  # the failed one rolled back, whole


def test_close_commits_what_is_left_and_refuses_later_writes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    writes = open_db(tmp_path)  # no event loop: nothing is scheduled, close commits
    for k in range(150):
        writes.add("INSERT INTO t (k, v) VALUES (?, ?)", (k, "x"))
    writes.close()
    assert len(values(writes)) == 150
    caplog.set_level(logging.INFO, logger="bridge.hub.batched_writes")
    writes.add("INSERT INTO t (k, v) VALUES (?, ?)", (999, "late"))
    assert writes.pending == 0 and "late write is not kept" in caplog.text


async def test_the_flushes_of_one_turn_share_one_commit(tmp_path: Path) -> None:
    """Fifty messages answered at once wait for one commit, not fifty (each did before)."""
    writes = open_db(tmp_path)
    durable: list[bool] = []

    async def answer(k: int) -> None:
        writes.add("INSERT INTO t (k, v) VALUES (?, ?)", (k, "answered"))
        await writes.flush()
        # On return its statement is on disk: another connection sees it.
        other = connect(str(tmp_path / "t.db"))
        durable.append(other.execute("SELECT 1 FROM t WHERE k = ?", (k,)).fetchone() is not None)
        other.close()

    await asyncio.gather(*(answer(k) for k in range(50)))
    assert durable == [True] * 50
    assert writes.transactions == 1 and writes.committed == 50


async def test_a_flush_with_nothing_queued_returns_at_once(tmp_path: Path) -> None:
    writes = open_db(tmp_path)
    await writes.flush()
    assert writes.transactions == 0


@pytest.mark.parametrize("bad", ["a\ud800b", 2**70], ids=["lone-surrogate", "huge-integer"])
async def test_a_write_sqlite_cannot_take_fails_alone(
    tmp_path: Path, bad: object, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 31: one unencodable parameter failed the whole transaction of that moment (and
    escaped the commit callback); now it fails only its own write, logged once."""
    writes = open_db(tmp_path)
    writes.add("INSERT INTO t (k, v) VALUES (?, ?)", (1, "before"))
    writes.add("INSERT INTO t (k, v) VALUES (?, ?)", (2, bad))
    writes.add("INSERT INTO t (k, v) VALUES (?, ?)", (3, "after"))
    with caplog.at_level(logging.WARNING, logger="bridge.hub.batched_writes"):
        await writes.flush()
    assert values(writes) == [(1, "before"), (3, "after")]
    [logged] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert "could not be kept" in logged.getMessage()
    assert writes.committed == 2
    writes.add("INSERT INTO t (k, v) VALUES (?, ?)", (4, "later"))
    await writes.flush()
    assert values(writes)[-1] == (4, "later")
