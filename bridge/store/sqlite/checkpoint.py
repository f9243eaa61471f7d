"""WAL checkpoints from a thread of their own, so writes on the event loop rarely wait.

With `wal_autocheckpoint` alone, the commit that crosses the threshold copies the whole WAL
back into the database file and fsyncs it, inline: 25-40 ms with the loop stopped, every
~1,650 tracked messages, whatever that commit was doing (a timeout sweep included). Here a
daemon thread with its own connection runs PASSIVE checkpoints: they never wait for the
writer, and sqlite3 releases the GIL while they work, so the loop keeps running. At the
rates a bridge sees (measured up to 2,000 tracked messages/s) the thread catches up between
two writes, SQLite starts the WAL afresh on the next one, and the loop connection's own
autocheckpoint is never reached (longest write 7 ms, against 36 ms without the thread).
Under writes as fast as the store can take them (the benchmarks' fill), no background round
ever ends fully caught up, the WAL reaches the loop's threshold, and that checkpoint still
syncs what was written since the thread's last round: those stalls remain, as before. The
loop also syncs the WAL's first frame after each fresh start (SQLite's guard against
out-of-order writes): one short fsync per restart, a handful a second under load.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading

from bridge.store.sqlite.connection import BUSY_TIMEOUT_MS, IN_MEMORY

log = logging.getLogger(__name__)

CHECKPOINT_INTERVAL = 0.5
"""Seconds between two background checkpoints while the WAL is caught up."""

CATCHING_UP = 0.025
"""Seconds between two rounds while writes keep coming. A round costs about the same however
little it copies (a look at the WAL index, an fsync of the database file), and it copies the
pages every write touches (an index's last leaf, the outbox's) once each time: rounds 2 ms
apart took about a tenth of the relay's CPU under a steady stream of writes (bench/relay.py),
25 ms apart under 3%. Further apart they cost the tracker more than they save: a longer WAL
makes every read look further in its index (bench/tracking.py: 100 ms apart, 20-30% fewer
tracked messages per CPU second). A later measure with rounds 250 ms apart did not repeat
that loss, but slowed one conversation at a time in the relay (docs/performance.md, Relay
path, stop 24), so the pacing stays."""

STEADY = 0.1
"""Seconds between two rounds while writes keep coming but the WAL is short (under
`BUSY_WAL_FRAMES`): its index is one small table, so a read pays nothing for the wait, and
a round's fixed cost (two fsyncs) is paid a quarter as often as at `CATCHING_UP` — the relay
at one message at a time spent 0.12 ms per round trip on its two databases' rounds at 25 ms,
0.05 ms at 100 ms (bench/relay.py, per-thread CPU from /proc)."""

BUSY_WAL_FRAMES = 1_000
"""A WAL this long has not started afresh lately: writes are coming in a steady stream, and
the rounds follow `CATCHING_UP` apart until it does."""


class Checkpointer:
    """The background checkpoint thread of one database file."""

    def __init__(self, path: str, interval: float = CHECKPOINT_INTERVAL) -> None:
        self._path = os.path.abspath(path)  # the same file, whatever the thread's cwd
        self._interval = interval
        self._stop = threading.Event()
        self.checkpoints = 0
        self._thread = threading.Thread(
            target=self._run, name=f"sqlite-checkpoint {path}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """End the thread after its current checkpoint (if any); a last one runs at close."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        try:
            db = sqlite3.connect(self._path, isolation_level=None)
        except sqlite3.Error:
            log.exception("no background checkpoints for %s", self._path)
            return
        try:
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            pause = self._interval
            while not self._stop.wait(pause):
                try:
                    _, frames, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.Error as exc:  # e.g. the disk is full; the loop's own remains
                    log.warning("background checkpoint of %s failed: %s", self._path, exc)
                    pause = self._interval
                    continue
                self.checkpoints += 1
                # While the WAL keeps growing (writes keep coming, so it cannot start afresh)
                # the next round follows at once, so the loop's own checkpoint meets few frames.
                pause = (CATCHING_UP if frames > BUSY_WAL_FRAMES
                         else STEADY if frames - copied > 0 else self._interval)
        finally:
            db.close()


def start_checkpoints(path: str) -> Checkpointer | None:
    """The running checkpoint thread of a database file; None for one in memory (no WAL)."""
    if path == IN_MEMORY:
        return None
    checkpointer = Checkpointer(path)
    checkpointer.start()
    return checkpointer
