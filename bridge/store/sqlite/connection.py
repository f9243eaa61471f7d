"""Opening the SQLite file and running write transactions (grouped where they can be).

The store calls sqlite3 inline from its async methods instead of hopping to a thread: every
statement is a sub-millisecond operation on a local file (WAL, `synchronous=NORMAL`, so a
commit does not wait for fsync), and a thread hop would cost more than the work while giving
up the property that makes each update atomic for free — nothing else runs on the event
loop between reading a record and writing its replacement. The price is that a write blocked
by another *process* holding the lock blocks the loop for up to `BUSY_TIMEOUT_MS`; several
bridge instances should share Redis, not one SQLite file.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000
LAZY_COMMIT = 0.05
"""Longest a `write_soon` write waits for its commit when no step that waits comes along."""
WAL_AUTOCHECKPOINT_PAGES = 10_000
IN_MEMORY = ":memory:"
PRIVATE_FILE_MODE = 0o600
"""Databases hold tokens' hashes, the hub's pseudonym key and people's messages: owner only."""


class StoreConnection(sqlite3.Connection):
    """A connection that can carry the group commit open on it (see `write_step`)."""

    group: GroupCommit | None = None


def create_private(path: str | os.PathLike[str]) -> None:
    """Create an empty file readable by its owner alone, unless it exists already.

    SQLite would create the file with the process umask (usually 0644: anyone on the
    machine could read it); it opens an existing file as it is, and gives its `-wal` and
    `-shm` files the database file's mode, so creating it first covers all three.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    except FileExistsError:
        return
    os.close(fd)


def connect(path: str) -> sqlite3.Connection:
    """Open (creating parent directories and a 0600 file) and configure one connection."""
    if path != IN_MEMORY:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        create_private(path)
    # isolation_level=None: we issue BEGIN/COMMIT ourselves, so a transaction spans exactly
    # what `write_transaction` wraps and nothing is committed implicitly.
    db = sqlite3.connect(path, isolation_level=None, factory=StoreConnection)
    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    # A checkpoint is the one write that waits for fsync, and it runs inline in whichever
    # commit crosses the threshold, stalling the event loop for tens of milliseconds. Fewer,
    # larger checkpoints (every ~40 MB of WAL instead of ~4 MB) keep that off the hot path.
    db.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
    return db


@contextmanager
def write_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE … COMMIT, rolled back if the body raises.

    IMMEDIATE takes the write lock up front, so a read-then-write cannot be overtaken by
    another process writing the same rows in between. A group commit open on the
    connection is committed first (early, never late).
    """
    group = getattr(db, "group", None)
    if group is not None:
        group.commit_now()
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        # Also when COMMIT itself fails (SQLITE_BUSY, I/O error): a transaction left open
        # would make every later BEGIN on this connection fail.
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


class GroupCommit:
    """The write steps of one turn of the event loop, committed together.

    Under load many chats write at once (a message seen, an output queued, a part posted,
    a sweep's batch of expiries closed): each step runs at once inside the open transaction,
    in a SAVEPOINT of its own (a step that fails undoes only itself; the step that began the
    transaction needs none, its rollback is the transaction's), and its caller awaits the
    COMMIT that ends the turn —
    so when a step returns its change is durable, as with its own transaction, but fifty
    steps cost one COMMIT instead of fifty.
    """

    def __init__(self, db: StoreConnection) -> None:
        self.db = db
        self.loop = asyncio.get_running_loop()
        """Held for the group's steps: asking for the running loop is a system call (the
        loop's process is checked), once per group rather than twice per step."""
        self.waiters: list[asyncio.Future[None]] = []
        """One future per step: a step whose caller is cancelled drops only its own, and
        none needs the shield (a future and two callbacks) a shared one would."""
        self.unwaited = 0
        """`write_soon` writes in the group: nobody hears if their commit fails."""
        db.execute("BEGIN IMMEDIATE")
        db.group = self
        self._due: asyncio.TimerHandle | None = None
        self._this_turn = False

    def commit_this_turn(self) -> None:
        """A step that waits for the commit joined: commit when this turn of the loop ends."""
        if not self._this_turn:
            self._this_turn = True
            self.loop.call_soon(self.commit_now)

    def commit_soon(self) -> None:
        """Only writes nobody waits for so far: commit within `LAZY_COMMIT` at the latest."""
        if not self._this_turn and self._due is None:
            self._due = self.loop.call_later(LAZY_COMMIT, self.commit_now)

    def _close(self) -> None:
        """No more steps join: the next one opens a group of its own."""
        self.db.group = None
        if self._due is not None:
            self._due.cancel()

    def roll_back(self) -> None:
        """Undo the group (its one step failed) and close it; the turn's commit finds it gone."""
        self._close()
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    def commit_now(self) -> None:
        if self.db.group is not self:
            return  # committed already (a plain transaction asked for it first)
        self._close()
        try:
            self.db.execute("COMMIT")
        except BaseException as exc:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            if self.unwaited:
                log.warning("store: a commit failed, and with it %d write(s) nobody waited "
                            "for: %s", self.unwaited, exc)
            self._tell(exc)
            return
        self._tell(None)

    def _tell(self, failure: BaseException | None) -> None:
        """Every step of the group learns how the commit went (a cancelled one is gone)."""
        for waiter in self.waiters:
            if waiter.done():
                continue
            if failure is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(failure)


class write_step:
    """One atomic write step, durable when the `async with` ends (see `GroupCommit`).

    The body must not await: a step runs whole, in one go, between two turns of the loop.
    A body of `one_statement` needs no SAVEPOINT: SQLite undoes a failed statement by
    itself and leaves the rest of the transaction as it was.

    A class, not an `@asynccontextmanager`: every relayed message takes several steps, and
    a generator-based context manager costs several times as much per block.
    """

    __slots__ = ("_db", "_group", "_one_statement", "_savepoint")

    def __init__(self, db: sqlite3.Connection, *, one_statement: bool = False) -> None:
        assert isinstance(db, StoreConnection), "open the database with connect()"
        self._db = db
        self._one_statement = one_statement
        self._savepoint = False
        self._group: GroupCommit | None = None

    async def __aenter__(self) -> sqlite3.Connection:
        db = self._db
        group = db.group
        # A step that begins the transaction needs no SAVEPOINT either: nothing can join it
        # before the body ends, so undoing the step is rolling the transaction back.
        self._savepoint = group is not None and not self._one_statement
        if group is None:
            group = GroupCommit(db)
        self._group = group
        group.commit_this_turn()
        if self._savepoint:
            db.execute("SAVEPOINT step")
        return db

    async def __aexit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        db, group = self._db, self._group
        assert group is not None
        if exc_type is not None:
            if self._savepoint:
                db.execute("ROLLBACK TO step")
                db.execute("RELEASE step")
            elif not self._one_statement:  # it began the transaction: undo that
                group.roll_back()
            return  # (a failed single statement undid itself)
        if self._savepoint:
            db.execute("RELEASE step")
        waiter = group.loop.create_future()
        group.waiters.append(waiter)
        await waiter


def write_soon(db: sqlite3.Connection, statement: str, args: tuple[object, ...]) -> sqlite3.Cursor:
    """One statement written now and committed without anyone waiting: with the next step
    that waits for its commit, or `LAZY_COMMIT` seconds later if none comes. For writes a
    crash may lose at no cost (see `SeenStore.note`); this connection reads them at once.
    Under one message at a time this saves the message's own commit: its key rides along
    with the commit of the bot's reply."""
    assert isinstance(db, StoreConnection), "open the database with connect()"
    group = db.group or GroupCommit(db)
    group.commit_soon()
    group.unwaited += 1
    return db.execute(statement, args)
