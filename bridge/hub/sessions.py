"""Channel sessions: one BCN session per (binding, scope key) until it is reset.

The active session of each scope is kept in `hub.db`, so a chat continues in the same
session (and bots keep their per-session history) across a hub restart. What happens
inside a session — its transcript, the msg_ids already accepted, the ping-pong count —
lives in memory and is bounded.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

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

    @property
    def running(self) -> bool:
        return self.status == "running"

    def record(self, role: str, name: str, text: str, timestamp: int) -> None:
        self.transcript.append({"role": role, "name": name, "text": text, "timestamp": timestamp})

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
        self._seen: dict[str, OrderedDict[str, str]] = {}
        for binding_id, scope, session_id, group_id, channel_type in db.rows(
            "SELECT binding_id, scope_key, session_id, group_id, channel_type"
            " FROM channel_sessions"
        ):
            self._install(self._new(session_id, group_id, binding_id, scope, channel_type))

    def _new(
        self, session_id: str, group_id: str, binding_id: str, scope: str, channel_type: str
    ) -> ChannelSession:
        return ChannelSession(
            session_id, group_id, binding_id, scope, channel_type,
            deque(maxlen=self._transcript_limit),
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
        self._db.write(
            "DELETE FROM channel_sessions WHERE binding_id = ? AND scope_key = ?",
            (session.binding_id, session.scope_key),
        )

    def _retire(self, session: ChannelSession) -> None:
        self._active.pop((session.binding_id, session.scope_key), None)
        self._retired[session.id] = None
        while len(self._retired) > RETIRED_SESSIONS_KEPT:
            old_id, _ = self._retired.popitem(last=False)
            self._by_id.pop(old_id, None)

    def get(self, session_id: str) -> ChannelSession | None:
        return self._by_id.get(session_id)

    def seen(self, binding_id: str, msg_id: str) -> ChannelSession | None:
        """The session a msg_id was first accepted into, if it was accepted before."""
        seen = self._seen.get(binding_id)
        session_id = None if seen is None else seen.get(msg_id)
        return None if session_id is None else self._by_id.get(session_id)

    def accept(self, binding_id: str, msg_id: str, session: ChannelSession) -> None:
        seen = self._seen.setdefault(binding_id, OrderedDict())
        seen[msg_id] = session.id
        if len(seen) > self._dedup_limit:
            seen.popitem(last=False)

    def __len__(self) -> int:
        return len(self._active)
