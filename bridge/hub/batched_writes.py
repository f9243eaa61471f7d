"""Writes to `hub.db` gathered into few transactions, so per-message state costs little.

The hub writes on every bot output (the delivery, and its deletion once acked), every
transcript line and every step of a run. A transaction per write costs a commit each
(~40-70 µs here); gathered, the same writes cost ~3-4 µs each (tests/hub/
test_hub_durability.py prints the figures for a burst). So writers `add` a statement and the
statements are committed together on the next turn of the event loop. A caller that must
know they are on disk before it acts (`await flush()` — before a delivery goes to a link,
before `channel.inbound` is answered) waits for that commit; every flush of one turn shares
it, so fifty messages arriving together cost one commit, not fifty.

A flush commits at most `chunk` statements (and about `chunk_bytes` of parameters) per
transaction and yields to the loop between transactions, so a burst never holds the loop
for more than one chunk: a few milliseconds. Statements are committed in the order they were
added, whoever flushes them. A transaction that fails (disk full, I/O error) is logged with
what it held and dropped: the hub keeps working from memory, only that crash safety is lost.
A statement whose parameters SQLite cannot take (text that cannot be encoded, an integer
beyond 64 bits: `UNBINDABLE`) fails alone, before it runs: it is logged once and the rest
of its transaction commits (docs/text.md, "Valid Unicode").
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections import deque

from bridge.store.sqlite.connection import write_transaction

log = logging.getLogger(__name__)

Statement = tuple[str, tuple[object, ...]]

UNBINDABLE = (UnicodeEncodeError, OverflowError)
"""What `execute` raises for parameters it cannot bind, before the statement runs: only that
statement fails, not the writes it was committed with."""

CHUNK = 500
CHUNK_BYTES = 4 * 1024 * 1024


class BatchedWrites:
    def __init__(
        self, db: sqlite3.Connection, *, chunk: int = CHUNK, chunk_bytes: int = CHUNK_BYTES
    ) -> None:
        self._db = db
        self._chunk = chunk
        self._chunk_bytes = chunk_bytes
        self._queue: deque[Statement] = deque()
        self._added = 0
        """Statements queued so far; with `_done`, what a flush must wait for."""
        self._done = 0
        """Statements committed, or dropped with a failed transaction, so far."""
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()
        """Flushes waiting, each for the statements queued up to its call, oldest first."""
        self._scheduled = False
        self._closed = False
        self.committed = 0
        """Statements committed so far."""
        self.transactions = 0
        self.busy = 0.0
        """Seconds spent in transactions so far."""
        self.longest = 0.0
        """The longest transaction so far, in seconds: how long a flush held the loop."""

    def add(self, sql: str, params: tuple[object, ...] = ()) -> None:
        """Queue one statement; it is committed soon, or by the next `flush()`."""
        if self._closed:
            # Only the stragglers of a stop get here (an ack answered while the hub closed):
            # what they would record, the next start redoes (a replay, a fresh report).
            log.info("hub.db is closed; a late write is not kept: %s", sql.split("(")[0])
            return
        self._queue.append((sql, params))
        self._added += 1
        if self._scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous caller): `close()` commits it
            return
        self._scheduled = True
        loop.call_soon(self._soon)

    @property
    def pending(self) -> int:
        return len(self._queue)

    async def flush(self) -> None:
        """Return once everything queued so far is on disk (or logged as failed): with the
        commit that ends this turn of the loop, which every flush of the turn shares."""
        target = self._added
        if self._done >= target:
            return
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._waiters.append((target, waiter))
        if not self._scheduled:  # queued without a loop, before this one ran
            self._scheduled = True
            loop.call_soon(self._soon)
        await waiter

    def close(self) -> None:
        """Commit what is left, all at once (the hub is stopping; nothing else runs)."""
        while self._queue:
            self._commit_chunk()
        self._closed = True

    def _soon(self) -> None:
        self._scheduled = False
        if not self._queue:
            return
        self._commit_chunk()
        if self._queue:  # more than a chunk: the rest on a later turn, the loop runs between
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._soon)

    def _release_waiters(self) -> None:
        waiters = self._waiters
        while waiters and waiters[0][0] <= self._done:
            _, waiter = waiters.popleft()
            if not waiter.done():  # its flush may have been cancelled meanwhile
                waiter.set_result(None)

    def _commit_chunk(self) -> None:
        taken: list[Statement] = []
        size = 0
        while self._queue and len(taken) < self._chunk and size < self._chunk_bytes:
            statement = self._queue.popleft()
            taken.append(statement)
            size += sum(len(p) for p in statement[1] if isinstance(p, str | bytes))
        started = time.perf_counter()
        failed = 0
        try:
            with write_transaction(self._db) as db:
                for sql, params in taken:
                    try:
                        db.execute(sql, params)
                    except UNBINDABLE as exc:
                        failed += 1
                        log.warning("hub.db: a write could not be kept (%s): %s",
                                    sql.split("(")[0].strip(), exc)
        except sqlite3.Error:
            log.exception("hub.db: a transaction of %d writes failed; that state is kept in "
                          "memory only and would not survive a restart", len(taken))
            return
        finally:
            self._done += len(taken)
            self._release_waiters()
        took = time.perf_counter() - started
        self.busy += took
        self.longest = max(self.longest, took)
        self.transactions += 1
        self.committed += len(taken) - failed
