"""Writes to `hub.db` gathered into few transactions, so per-message state costs little.

The hub writes on every bot output (the delivery, and its deletion once acked), every
transcript line and every step of a run. A transaction per write costs a commit each
(~40-70 µs here); gathered, the same writes cost ~3-4 µs each (tests/hub/
test_hub_durability.py prints the figures for a burst). So writers `add` a statement and the
statements are committed together on the next turn of the event loop. A caller that must
know they are on disk before it acts (`await flush()` — before a delivery goes to a link,
before `channel.inbound` is answered) waits for that commit; every flush of one turn shares
it, so fifty messages arriving together cost one commit, not fifty.

Some writes need no commit of their own (`lazy=True`): the deletion of a delivery a link
acked, a run's id once its bot acknowledged it. Nothing outside the hub waits on them and a
kill -9 that loses one costs a replay the bridge drops, or a run restored under its send key
(`run_rows.py`). They wait for the next commit someone needs — the next message's, usually
a moment later — or for `LAZY_DELAY`, whichever comes first, so a round trip costs the two
commits it must have (the message accepted, the reply about to be delivered), not four.

A statement can also make earlier ones moot (`supersedes`: keys of statements still queued,
e.g. a run's `DELETE` makes its queued `UPDATE`s moot); those are dropped unexecuted, so a
run that starts and ends between two commits writes one statement, not three.

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
from typing import Any

from bridge.store.sqlite.connection import write_transaction

log = logging.getLogger(__name__)

Statement = list[Any]
"""[sql, params, key]: sql is None once superseded (dropped unexecuted)."""

UNBINDABLE = (UnicodeEncodeError, OverflowError)
"""What `execute` raises for parameters it cannot bind, before the statement runs: only that
statement fails, not the writes it was committed with."""

CHUNK = 500
CHUNK_BYTES = 4 * 1024 * 1024
LAZY_DELAY = 0.05
"""Seconds a lazy write waits for another commit to ride on before it commits alone: the
longest a kill -9 can take one away."""


class BatchedWrites:
    def __init__(
        self, db: sqlite3.Connection, *, chunk: int = CHUNK, chunk_bytes: int = CHUNK_BYTES
    ) -> None:
        self._db = db
        self._chunk = chunk
        self._chunk_bytes = chunk_bytes
        self._queue: deque[Statement] = deque()
        self._added = 0
        """Statements queued so far."""
        self._needed = 0
        """`_added` at the last statement that is not lazy: what a flush must wait for."""
        self._keyed: dict[object, Statement] = {}
        """Key → its statement while queued (for `supersedes`)."""
        self._lazy_timer: asyncio.TimerHandle | None = None
        self.superseded = 0
        """Statements dropped unexecuted because a later one made them moot."""
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

    def add(self, sql: str, params: tuple[object, ...] = (), *, lazy: bool = False,
            key: object = None, supersedes: tuple[object, ...] = ()) -> None:
        """Queue one statement; it is committed soon, or by the next `flush()`. `lazy`: it
        may wait for a later commit (see the module's docstring). `key` names it while it is
        queued; `supersedes` drops the queued statements of those keys (this one makes them
        moot: the same row written again, or deleted)."""
        if self._closed:
            # Only the stragglers of a stop get here (an ack answered while the hub closed):
            # what they would record, the next start redoes (a replay, a fresh report).
            log.info("hub.db is closed; a late write is not kept: %s", sql.split("(")[0])
            return
        for moot in supersedes:
            earlier = self._keyed.pop(moot, None)
            if earlier is not None and earlier[0] is not None:
                earlier[0] = None
                self.superseded += 1
        statement: Statement = [sql, params, key]
        if key is not None:
            self._keyed[key] = statement
        self._queue.append(statement)
        self._added += 1
        if not lazy:
            self._needed = self._added
        self._schedule(lazy)

    def _schedule(self, lazy: bool) -> None:
        if self._scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous caller): `close()` commits it
            return
        if lazy:
            if self._lazy_timer is None:
                self._lazy_timer = loop.call_later(LAZY_DELAY, self._lazy_due)
            return
        self._scheduled = True
        loop.call_soon(self._soon)

    def _lazy_due(self) -> None:
        self._lazy_timer = None
        if not self._scheduled:
            self._soon()

    @property
    def pending(self) -> int:
        return len(self._queue)

    async def flush(self) -> None:
        """Return once everything queued so far is on disk (or logged as failed): with the
        commit that ends this turn of the loop, which every flush of the turn shares."""
        target = self._needed
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
        if self._lazy_timer is not None:
            self._lazy_timer.cancel()
            self._lazy_timer = None
        self._closed = True

    def _soon(self) -> None:
        self._scheduled = False
        if self._lazy_timer is not None:  # the lazy writes ride on this commit
            self._lazy_timer.cancel()
            self._lazy_timer = None
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
        size = count = 0
        queue, keyed = self._queue, self._keyed
        while queue and count < self._chunk and size < self._chunk_bytes:
            statement = queue.popleft()
            count += 1
            sql, params, key = statement
            if sql is None:
                continue  # superseded: moot
            if key is not None and keyed.get(key) is statement:
                del keyed[key]  # taken: it can no longer be superseded
            taken.append(statement)
            for param in params:
                if type(param) is str or type(param) is bytes:
                    size += len(param)
        started = time.perf_counter()
        failed = 0
        try:
            with write_transaction(self._db) as db:
                for sql, params, _ in taken:
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
            self._done += count
            self._release_waiters()
        took = time.perf_counter() - started
        self.busy += took
        self.longest = max(self.longest, took)
        self.transactions += 1
        self.committed += len(taken) - failed
