"""Channel sessions: one BCN session per (binding, scope key) until it is reset.

The active session of each scope is kept in `hub.db`, so a chat continues in the same
session (and bots keep their per-session history) across a hub restart. So are the last
`RETIRED_SESSIONS_KEPT` reset or completed sessions, the transcript of every session kept
(its last `transcript_limit` lines) so `channel.history` answers after a restart as before
it, and the last `dedup_limit` msg_ids each binding accepted, so a message resent after a
crash is a duplicate. Lines and msg_ids are append-only logs (`append_log.py`), written in
the batches of `batched_writes.py`. The ping-pong count lives in memory only.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from bridge.fastjson import dumps, loads
from bridge.hub.append_log import AppendLog
from bridge.hub.storage import HubDatabase

log = logging.getLogger(__name__)

RETIRED_SESSIONS_KEPT = 1_000
"""Reset sessions stay reachable (history, abort, late replies) until this many newer ones."""


@dataclass(slots=True, eq=False)
class ChannelSession:
    id: str
    group_id: str
    binding_id: str
    scope_key: str
    channel_type: str
    transcript: deque[dict[str, Any]]
    originator: str | None = None
    humans: dict[str, None] = field(default_factory=dict)
    """Human display names seen here, in order (an ordered set)."""
    bot_turns: int = 0
    guard_tripped: bool = False
    status: str = "running"
    """`running` until reset (`reset`) or completed by a bot (`completed` / `failed`)."""
    output: Any = None
    error: str | None = None
    line_ids: deque[int] = field(default_factory=deque)
    """The `transcript_lines` row of each line of `transcript`, in the same order."""

    @property
    def running(self) -> bool:
        return self.status == "running"

    def human_spoke(self, name: str) -> None:
        """A human message ends any bot-to-bot exchange and re-arms the ping-pong guard."""
        self.bot_turns = 0
        self.guard_tripped = False
        if self.originator is None:
            self.originator = name
        if name not in self.humans and len(self.humans) < 50:
            self.humans[name] = None


class SessionDirectory:
    def __init__(self, db: HubDatabase, *, transcript_limit: int, dedup_limit: int) -> None:
        self._db = db
        self._transcript_limit = transcript_limit
        self._dedup_limit = dedup_limit
        self._active: dict[tuple[str, str], ChannelSession] = {}
        self._by_id: dict[str, ChannelSession] = {}
        self._retired: OrderedDict[str, None] = OrderedDict()
        self._seen: dict[str, OrderedDict[str, tuple[str, int]]] = {}
        """binding id → accepted msg_id → (its session's id, its `accepted_log` row)."""
        self._lines = AppendLog(db, "transcript_lines")
        self._accepted = AppendLog(db, "accepted_log")
        for binding_id, scope, session_id, group_id, channel_type in db.rows(
            "SELECT binding_id, scope_key, session_id, group_id, channel_type"
            " FROM channel_sessions"
        ):
            self._install(self._new(session_id, group_id, binding_id, scope, channel_type))
        self._load_retired()
        self._load_transcripts()
        self._load_accepted()

    def _load_accepted(self) -> None:
        """The msg_ids accepted before a restart (the last `dedup_limit` per binding)."""
        past_bound: list[int] = []
        for row_id, binding_id, msg_id, session_id in self._db.rows(
            "SELECT id, binding_id, msg_id, session_id FROM accepted_log ORDER BY id"
        ):
            seen = self._seen.setdefault(binding_id, OrderedDict())
            seen[msg_id] = (session_id, row_id)
            if len(seen) > self._dedup_limit:
                past_bound.append(seen.popitem(last=False)[1][1])
        self._accepted.trim_at_start(past_bound)

    def _load_retired(self) -> None:
        for row in _recent_retired(self._db, RETIRED_SESSIONS_KEPT):
            session_id, binding_id, scope, group_id, channel_type, status, output, error = row
            if session_id in self._by_id:
                continue
            session = self._new(session_id, group_id, binding_id, scope, channel_type)
            session.status, session.error = status, error
            session.output = None if output is None else _loads(output, session_id)
            self._by_id[session_id] = session
            self._retired[session_id] = None

    def _load_transcripts(self) -> None:
        """The kept lines of every known session; rows of sessions no longer kept go, and
        rows past a session's bound."""
        self._db.write(
            "DELETE FROM transcript_lines WHERE session_id NOT IN"
            " (SELECT session_id FROM channel_sessions"
            "  UNION SELECT session_id FROM retired_sessions)"
        )
        past_bound: list[int] = []
        for row_id, session_id, entry in self._db.rows(
            "SELECT id, session_id, entry FROM transcript_lines ORDER BY id"
        ):
            session = self._by_id.get(session_id)
            if session is None:
                continue
            line = _loads(entry, session_id)
            if not isinstance(line, dict):
                past_bound.append(row_id)
                continue
            if len(session.line_ids) == self._transcript_limit:
                past_bound.append(session.line_ids[0])
            session.transcript.append(line)
            session.line_ids.append(row_id)
        self._lines.trim_at_start(past_bound)

    def record(
        self, session: ChannelSession, role: str, name: str, text: str, timestamp: int,
        *, protocol: dict[str, Any] | None = None,
    ) -> None:
        """Add one line to a session's transcript (in memory now, in `hub.db` batched)."""
        entry: dict[str, Any] = {"role": role, "name": name, "text": text,
                                 "timestamp": timestamp}
        if protocol is not None:
            entry["protocol"] = protocol
        row_id = self._lines.next_id()
        if len(session.line_ids) == self._transcript_limit:
            self._lines.evict((session.line_ids[0],))
        session.transcript.append(entry)
        session.line_ids.append(row_id)
        self._db.writes.add(
            "INSERT INTO transcript_lines (id, session_id, entry) VALUES (?, ?, ?)",
            (row_id, session.id, dumps(entry)))

    def _new(
        self, session_id: str, group_id: str, binding_id: str, scope: str, channel_type: str
    ) -> ChannelSession:
        return ChannelSession(
            session_id, group_id, binding_id, scope, channel_type,
            deque(maxlen=self._transcript_limit), line_ids=deque(maxlen=self._transcript_limit),
        )

    def _install(self, session: ChannelSession) -> None:
        self._active[(session.binding_id, session.scope_key)] = session
        self._by_id[session.id] = session

    def resolve(
        self, binding_id: str, scope_key: str, group_id: str, channel_type: str
    ) -> tuple[ChannelSession, bool]:
        """The active session for this scope, opening one if there is none."""
        session = self._active.get((binding_id, scope_key))
        if session is not None and session.group_id == group_id:
            return session, False
        if session is not None:  # the chat was re-bound to another group: start afresh
            self._retire(session)
        session_id = f"{group_id}:channel_{channel_type}_{secrets.token_hex(4)}"
        while session_id in self._by_id:
            session_id = f"{group_id}:channel_{channel_type}_{secrets.token_hex(4)}"
        session = self._new(session_id, group_id, binding_id, scope_key, channel_type)
        self._db.write(
            "INSERT OR REPLACE INTO channel_sessions"
            " (binding_id, scope_key, session_id, group_id, channel_type, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (binding_id, scope_key, session_id, group_id, channel_type, time.time()),
        )
        self._install(session)
        log.info("session created: %s (binding %s)", session_id, binding_id)
        return session, True

    def reset(self, binding_id: str, scope_key: str) -> str | None:
        """End the active session of this scope; the next message opens a new one."""
        session = self._active.get((binding_id, scope_key))
        if session is None:
            return None
        session.status = "reset"
        self._end(session)
        log.info("session reset: %s", session.id)
        return session.id

    def complete(self, session: ChannelSession, output: Any, error: str | None) -> bool:
        """A bot ended the session (`session.complete`); False if it had already ended.

        Like a reset, the chat's next message opens a new session; the ended one stays
        reachable (history, late replies) with its status, output and error.
        """
        if not session.running:
            return False
        session.status = "failed" if error else "completed"
        session.output, session.error = output, error
        self._end(session)
        log.info("session %s: %s", session.status, session.id)
        return True

    def _end(self, session: ChannelSession) -> None:
        if self._active.get((session.binding_id, session.scope_key)) is not session:
            return
        self._retire(session)

    def _retire(self, session: ChannelSession) -> None:
        """No longer the scope's session; kept reachable (and in `hub.db`) while recent."""
        self._active.pop((session.binding_id, session.scope_key), None)
        self._retired[session.id] = None
        statements: list[tuple[str, tuple[object, ...]]] = [
            ("DELETE FROM channel_sessions WHERE session_id = ?", (session.id,)),
            ("INSERT OR REPLACE INTO retired_sessions (session_id, binding_id, scope_key,"
             " group_id, channel_type, status, output, error, retired_at)"
             " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
             (session.id, session.binding_id, session.scope_key, session.group_id,
              session.channel_type, session.status, _json_or_none(session.output),
              session.error, time.time())),
        ]
        while len(self._retired) > RETIRED_SESSIONS_KEPT:
            old_id, _ = self._retired.popitem(last=False)
            old = self._by_id.pop(old_id, None)
            if old is not None:
                self._lines.evict(old.line_ids)
            statements.append(("DELETE FROM retired_sessions WHERE session_id = ?", (old_id,)))
        self._db.write_all(statements)

    def get(self, session_id: str) -> ChannelSession | None:
        return self._by_id.get(session_id)

    def stand_in(self, session_id: str, binding_id: str) -> ChannelSession:
        """A session no longer kept, rebuilt from its id: enough to address a notice."""
        group_id, _, rest = session_id.partition(":")
        channel_type = rest.removeprefix("channel_").rpartition("_")[0]
        session = self._new(session_id, group_id, binding_id, "", channel_type)
        session.status = "reset"
        return session

    def seen(self, binding_id: str, msg_id: str) -> ChannelSession | None:
        """The session a msg_id was first accepted into, if it was accepted before."""
        seen = self._seen.get(binding_id)
        found = None if seen is None else seen.get(msg_id)
        return None if found is None else self._by_id.get(found[0])

    def accept(self, binding_id: str, msg_id: str, session: ChannelSession) -> None:
        """Remember an accepted msg_id (in `hub.db` too, batched with the answer's flush),
        so a bridge resending it after a hub crash gets `duplicate`, not a second run."""
        seen = self._seen.setdefault(binding_id, OrderedDict())
        row_id = self._accepted.next_id()
        seen[msg_id] = (session.id, row_id)
        if len(seen) > self._dedup_limit:
            self._accepted.evict((seen.popitem(last=False)[1][1],))
        self._db.writes.add(
            "INSERT INTO accepted_log (id, binding_id, msg_id, session_id) VALUES (?, ?, ?, ?)",
            (row_id, binding_id, msg_id, session.id))

    def __len__(self) -> int:
        return len(self._active)


def _recent_retired(db: HubDatabase, limit: int) -> list[Any]:
    """The most recent `limit` retired sessions, oldest first (the order they retire in)."""
    rows = db.rows(
        "SELECT session_id, binding_id, scope_key, group_id, channel_type, status, output,"
        " error FROM retired_sessions ORDER BY retired_at DESC LIMIT ?", (limit,)
    )
    return list(reversed(rows))


def _loads(text: str, session_id: str) -> Any:
    """A stored JSON value; an unreadable one is left out with a log line, not a crash."""
    try:
        return loads(text)
    except ValueError as exc:
        log.error("session %s: an unreadable stored value is left out (%s)", session_id, exc)
        return None


def _json_or_none(value: Any) -> str | None:
    """A session's output as stored; a value JSON cannot hold is kept as its text."""
    if value is None:
        return None
    return dumps(value, default=str)
