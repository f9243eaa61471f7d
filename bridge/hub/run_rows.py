"""Runs in flight in `hub.db`, so a restart can end them with a word instead of silence.

One row per `chat.send`, keyed by its `idempotency_key`: written when it is sent (run id
still unknown), given the run id by the ACK, its output `seq` and the bot's last `seq` as it
goes, deleted when the run ends. After a restart the rows left are runs that no bot can be
assumed to finish: `RunTable.restore` brings them back as orphans (`orphans.py`).
All writes are batched (`BatchedWrites`); none of them is needed before the hub acts. The
run id is written lazily (with the next commit, within `LAZY_DELAY`): a kill -9 that loses
it leaves the row under its send key, restored as an orphan and ended with a word. A row's
`DELETE` supersedes its writes still queued, so a run that starts and ends between two
commits costs its insert and its delete alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bridge.hub.batched_writes import BatchedWrites
from bridge.hub.storage import HubDatabase

if TYPE_CHECKING:
    from bridge.hub.runs import PendingSend, Run


@dataclass(frozen=True, slots=True)
class StoredRun:
    send_key: str
    bot_uuid: str
    run_id: str | None
    """None when the hub stopped before the bot acknowledged the chat.send."""
    session_id: str
    binding_id: str
    session_key: str
    source_msg_id: str | None
    thread_id: str | None
    task_id: str | None
    seq: int
    bot_seq: int | None


class RunRows:
    def __init__(self, db: HubDatabase) -> None:
        self._db = db
        self._writes: BatchedWrites = db.writes

    def sent(self, pending: PendingSend) -> None:
        self._writes.add(
            "INSERT OR REPLACE INTO runs (send_key, bot_uuid, run_id, session_id, binding_id,"
            " session_key, source_msg_id, thread_id, task_id, seq, bot_seq, started_at)"
            " VALUES (?, ?, NULL, ?, ?, ?, ?, ?, ?, 0, NULL, ?)",
            (pending.send_key, pending.bot_uuid, pending.session.id, pending.session.binding_id,
             pending.session_key, pending.source_msg_id, pending.thread_id, pending.task_id,
             time.time()),
            key=("run", pending.send_key),
        )

    def started(self, run: Run) -> None:
        self._writes.add("UPDATE runs SET run_id = ? WHERE send_key = ?",
                         (run.run_id, run.send_key), lazy=True, key=("run id", run.send_key))

    def progressed(self, run: Run) -> None:
        key = ("run seq", run.send_key)
        self._writes.add("UPDATE runs SET seq = ?, bot_seq = ? WHERE send_key = ?",
                         (run.seq, run.bot_seq, run.send_key), key=key, supersedes=(key,))

    def ended(self, send_key: str) -> None:
        self._writes.add("DELETE FROM runs WHERE send_key = ?", (send_key,),
                         supersedes=(("run", send_key), ("run id", send_key),
                                     ("run seq", send_key)))

    def load(self) -> list[StoredRun]:
        return [StoredRun(*row) for row in self._db.rows(
            "SELECT send_key, bot_uuid, run_id, session_id, binding_id, session_key,"
            " source_msg_id, thread_id, task_id, seq, bot_seq FROM runs ORDER BY started_at"
        )]
