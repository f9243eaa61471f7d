"""Opening the SQLite file and running write transactions.

The store calls sqlite3 inline from its async methods instead of hopping to a thread: every
statement is a sub-millisecond operation on a local file (WAL, `synchronous=NORMAL`, so a
commit does not wait for fsync), and a thread hop would cost more than the work while giving
up the property that makes each update atomic for free — nothing else runs on the event
loop between reading a record and writing its replacement. The price is that a write blocked
by another *process* holding the lock blocks the loop for up to `BUSY_TIMEOUT_MS`; several
bridge instances should share Redis, not one SQLite file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BUSY_TIMEOUT_MS = 5000
WAL_AUTOCHECKPOINT_PAGES = 10_000
IN_MEMORY = ":memory:"


def connect(path: str) -> sqlite3.Connection:
    """Open (creating parent directories) and configure one database connection."""
    if path != IN_MEMORY:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    # isolation_level=None: we issue BEGIN/COMMIT ourselves, so a transaction spans exactly
    # what `write_transaction` wraps and nothing is committed implicitly.
    db = sqlite3.connect(path, isolation_level=None)
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
    another process writing the same rows in between.
    """
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
