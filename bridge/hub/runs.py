"""Runs: which session each bot reply belongs to, from the `chat.send` ACK onwards.

A bot's `chat.event` names only its own `run_id`; the hub learns run → session from the
ACK of the `chat.send` that started it. Between sending and that ACK the delivery is a
`PendingSend`, which `channel.abort` counts as running. Finished runs are remembered
(bounded) so that aborting one again is an idempotent success, not "unknown run", and
so that late events of an aborted run can be recognised and dropped.

With `rows`, every pending send and running run is also kept in `hub.db` (`run_rows.py`);
`restore` brings back the ones a stopped or crashed hub left, for `orphans.py` to end
unless their bot continues them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from bridge.bcn.errors import BcnError
from bridge.hub.run_rows import RunRows, StoredRun
from bridge.hub.sessions import ChannelSession

log = logging.getLogger(__name__)

RunState = Literal["running", "final", "error", "aborted", "expired", "offline"]
"""`offline`: its bot went away mid-reply and did not continue it (`orphans.py`)."""
FINISHED_RUNS_KEPT = 20_000


@dataclass(slots=True, eq=False)
class Run:
    bot_uuid: str
    run_id: str
    session: ChannelSession
    session_key: str
    source_msg_id: str | None
    thread_id: str | None
    active_at: float
    """Loop time of the ACK or the latest event: a run silent past its timeout ends."""
    seq: int = 0
    state: RunState = "running"
    task_id: str | None = None
    """Set when a manager's `task.dispatch` started the run: its final goes to the manager."""
    bot_seq: int | None = None
    """The last v3 `seq` accepted from the bot for this run (strictly increasing)."""
    terminal_fingerprint: str | None = None
    """The bot's terminal event, so an identical replay of it is ignored, not refused."""
    streamed: str = ""
    """The deltas so far (bounded), for a final that leaves its text to them."""
    send_key: str = ""
    """The `idempotency_key` of the chat.send that started it: its row in `hub.db`."""
    orphaned_until: float | None = None
    """Set (loop time) while its bot has no live connection: the run ends with an error
    then, unless an event of the bot continues it first (`orphans.py`)."""
    answers_person: bool = False
    """A person's message started it: its final answers that person and is no bot turn of
    the ping-pong guard (a run restored from `hub.db` counts, the safe side)."""

    @property
    def running(self) -> bool:
        return self.state == "running"

    def next_seq(self) -> int:
        """Per-run output numbers are the hub's own: bots' event seqs are not trusted."""
        self.seq += 1
        return self.seq


@dataclass(slots=True, eq=False)
class PendingSend:
    """A `chat.send` on the wire whose ACK (carrying the run id) has not been handled."""

    bot_uuid: str
    session: ChannelSession
    session_key: str
    source_msg_id: str | None
    thread_id: str | None
    answer: asyncio.Future[dict[str, Any]]
    task_id: str | None = None
    failure: str | None = None
    """Why no run came of this delivery (the bot refused it, or reused a run id)."""
    send_key: str = ""
    """The delivery's `idempotency_key`."""
    answers_person: bool = False
    """The message it delivers is a person's (see `Run.answers_person`)."""


class RunTable:
    def __init__(self, rows: RunRows | None = None) -> None:
        self._rows = rows
        self._active: dict[tuple[str, str], Run] = {}
        self._finished: OrderedDict[tuple[str, str], Run] = OrderedDict()
        self._pending: dict[str, dict[PendingSend, None]] = {}
        self._pending_by_session: dict[str, dict[PendingSend, None]] = {}
        self.stopping = False
        """Set while the hub stops: sends cut off by the shutdown keep their rows, so the
        next start reports them instead of forgetting them."""
        self.started = 0
        self.ended: Counter[str] = Counter()
        """Runs started and ended (by final state) since the hub started, for `/metrics`."""

    # ------------------------------------------------------------------ pending sends
    def sent(self, pending: PendingSend) -> None:
        if self._rows is not None:
            self._rows.sent(pending)
        self._pending.setdefault(pending.bot_uuid, {})[pending] = None
        self._pending_by_session.setdefault(pending.session.id, {})[pending] = None
        pending.answer.add_done_callback(lambda _f: self.acked(pending))

    def acked(self, pending: PendingSend) -> Run | None:
        """Turn an answered `chat.send` into a run; safe to call more than once."""
        by_bot = self._pending.get(pending.bot_uuid)
        if by_bot is None or pending not in by_bot:
            return None
        del by_bot[pending]
        if not by_bot:
            del self._pending[pending.bot_uuid]
        by_session = self._pending_by_session.get(pending.session.id, {})
        by_session.pop(pending, None)
        if not by_session:
            self._pending_by_session.pop(pending.session.id, None)
        run = self._start(pending)
        if self._rows is not None:
            if run is not None:
                self._rows.started(run)
            elif not self.stopping:
                self._rows.ended(pending.send_key)
        return run

    def _start(self, pending: PendingSend) -> Run | None:
        """The run an answered chat.send started, or None (with `pending.failure` set)."""
        if pending.answer.cancelled():
            pending.failure = "the delivery was cancelled"
            return None
        error = pending.answer.exception()
        if error is not None:
            pending.failure = _failure(error)
            return None
        run_id = pending.answer.result().get("run_id")
        if not isinstance(run_id, str) or not run_id:
            log.warning("bot %s acked chat.send without a run_id", pending.bot_uuid)
            pending.failure = "it acknowledged it without a run_id"
            return None
        key = (pending.bot_uuid, run_id)
        if key in self._active or key in self._finished:
            log.warning("bot %s reused run id %r; keeping the first", pending.bot_uuid, run_id)
            pending.failure = f"it answered with run id {run_id!r}, which it had already used"
            return None
        run = Run(pending.bot_uuid, run_id, pending.session, pending.session_key,
                  pending.source_msg_id, pending.thread_id, asyncio.get_running_loop().time(),
                  task_id=pending.task_id, send_key=pending.send_key,
                  answers_person=pending.answers_person)
        self._active[key] = run
        self.started += 1
        return run

    def restore(
        self, stored: list[StoredRun], session_of: Callable[[StoredRun], ChannelSession]
    ) -> list[Run]:
        """Bring back the runs a previous hub process left in flight; returns them.

        A chat.send the bot never acknowledged comes back under its `idempotency_key`,
        which is the run id the BCN's own engines (and this SDK) choose.
        """
        now = asyncio.get_running_loop().time()
        restored = []
        for row in stored:
            run_id = row.run_id or row.send_key
            key = (row.bot_uuid, run_id)
            if key in self._active:
                if self._rows is not None:
                    self._rows.ended(row.send_key)
                continue
            run = Run(row.bot_uuid, run_id, session_of(row), row.session_key,
                      row.source_msg_id, row.thread_id, now, seq=row.seq, task_id=row.task_id,
                      bot_seq=row.bot_seq, send_key=row.send_key)
            self._active[key] = run
            restored.append(run)
        return restored

    def settle(self, bot_uuid: str, run_id: str | None = None) -> None:
        """Handle ACKs already received but whose callbacks have not run yet.

        A bot sends its ACK and its first event back to back; the event can reach the
        handler before the future's callback does. Settling first keeps them in order.
        With `run_id`, it stops once that run has started: a bot answers its sends about in
        the order they went, so the run an event names is among the oldest, and a bot with
        fifty sends in flight is not walked through all fifty for every event.
        """
        for pending in list(self._pending.get(bot_uuid, ())):
            if pending.answer.done():
                run = self.acked(pending)
                if run is not None and run.run_id == run_id:
                    return

    def pending_in(self, session_id: str) -> list[PendingSend]:
        return list(self._pending_by_session.get(session_id, ()))

    # ------------------------------------------------------------------ runs
    def find(self, bot_uuid: str, run_id: str) -> Run | None:
        key = (bot_uuid, run_id)
        return self._active.get(key) or self._finished.get(key)

    def find_any(self, run_id: str) -> list[Run]:
        """Every run with this id, whichever bot owns it (channel.abort names only the id)."""
        return [run for run in (*self._active.values(), *self._finished.values())
                if run.run_id == run_id]

    def running_in(self, session_id: str) -> list[Run]:
        return [run for run in self._active.values() if run.session.id == session_id]

    def running_of(self, bot_uuid: str) -> list[Run]:
        return [run for run in self._active.values() if run.bot_uuid == bot_uuid]

    def latest_of(self, bot_uuid: str, group_id: str) -> Run | None:
        """The bot's most recent run in a group, running ones first (task tools use it)."""
        for runs in (reversed(self._active.values()), reversed(self._finished.values())):
            for run in runs:
                if run.bot_uuid == bot_uuid and run.session.group_id == group_id:
                    return run
        return None

    def finish(self, run: Run, state: RunState) -> None:
        key = (run.bot_uuid, run.run_id)
        run.state = state
        run.orphaned_until = None
        if self._active.pop(key, None) is not None:
            self.ended[state] += 1
            if self._rows is not None:
                self._rows.ended(run.send_key)
        self._finished[key] = run
        while len(self._finished) > FINISHED_RUNS_KEPT:
            self._finished.popitem(last=False)

    def progressed(self, run: Run) -> None:
        """The run's output and event numbers moved on: keep them for a restart."""
        if self._rows is not None and run.running:
            self._rows.progressed(run)

    def expire(self, now: float, max_age: float) -> list[Run]:
        """End runs silent for longer than their timeout; returns them."""
        stale = [run for run in self._active.values() if now - run.active_at > max_age]
        for run in stale:
            self.finish(run, "expired")
        return stale

    @property
    def running_count(self) -> int:
        return len(self._active)


def _failure(error: BaseException) -> str:
    """Why a `chat.send` produced no run, in words for the chat."""
    if isinstance(error, BcnError):
        return f"it refused it ({error.code}: {error.message})"
    if isinstance(error, TimeoutError):
        return "it did not acknowledge it in time"
    if isinstance(error, ConnectionError):
        return "it went offline before acknowledging it"
    return f"the delivery failed ({type(error).__name__})"
