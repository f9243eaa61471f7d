"""The bot's own record of each session, used to answer `chat.history`.

BCN stores no chat messages: when it needs a session's history it asks the bot.
The store keeps a bounded number of messages per `session_key` in memory and, when given a
path, mirrors them to one JSON file so that history survives a restart.
"""

from __future__ import annotations

import json
import logging
import os
from collections import deque
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

HistoryEntry = dict[str, Any]
"""One message as BCN's `chat.history` payload shows it: role, content, timestamp."""


class HistoryStore:
    def __init__(
        self,
        *,
        max_messages_per_session: int = 200,
        max_sessions: int = 1000,
        path: str | os.PathLike[str] | None = None,
    ) -> None:
        if max_messages_per_session < 1 or max_sessions < 1:
            raise ValueError("history limits must be at least 1")
        self.max_messages_per_session = max_messages_per_session
        self.max_sessions = max_sessions
        self.path = Path(path) if path is not None else None
        self._sessions: dict[str, deque[HistoryEntry]] = {}
        self._session_ids: dict[str, str] = {}
        if self.path is not None:
            self._load()

    def record(
        self,
        session_key: str,
        role: str,
        content: str,
        timestamp: int,
        *,
        session_id: str | None = None,
    ) -> None:
        """Append one message; the oldest message (and least recent session) fall out."""
        messages = self._sessions.pop(session_key, None)
        if messages is None:
            messages = deque(maxlen=self.max_messages_per_session)
        self._sessions[session_key] = messages  # re-inserted: most recently used last
        messages.append({"role": role, "content": content, "timestamp": timestamp})
        if session_id:
            self._session_ids[session_key] = session_id
        while len(self._sessions) > self.max_sessions:
            oldest = next(iter(self._sessions))
            del self._sessions[oldest]
            self._session_ids.pop(oldest, None)
        self._save()

    def messages(self, session_key: str, limit: int | None = None) -> list[HistoryEntry]:
        """The newest `limit` messages of a session, oldest first; [] for an unknown one."""
        stored = list(self._sessions.get(session_key, ()))
        if limit is not None:
            stored = stored[-limit:] if limit > 0 else []
        return [dict(entry) for entry in stored]

    def session_id(self, session_key: str) -> str | None:
        """The BCN group id seen with this session (BCN's `session_id` field)."""
        return self._session_ids.get(session_key)

    # ------------------------------------------------------------------ file mirror
    def _load(self) -> None:
        assert self.path is not None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise ValueError(f"history file {os.fspath(self.path)!r} is unreadable: {exc}") from exc
        sessions = data.get("sessions") if isinstance(data, dict) else None
        if not isinstance(sessions, dict):
            raise ValueError(f"history file {os.fspath(self.path)!r} has no 'sessions' object")
        for key, body in sessions.items():
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                continue
            entries = [entry for entry in body["messages"] if _is_entry(entry)]
            self._sessions[key] = deque(entries, maxlen=self.max_messages_per_session)
            if isinstance(body.get("session_id"), str):
                self._session_ids[key] = body["session_id"]

    def _save(self) -> None:
        """Rewrite the mirror file; small enough that a whole rewrite beats a journal."""
        if self.path is None:
            return
        body = {
            "sessions": {
                key: {"session_id": self._session_ids.get(key), "messages": list(messages)}
                for key, messages in self._sessions.items()
            }
        }
        temp = self.path.with_name(f".{self.path.name}.tmp")
        try:
            # 0600 from the start: the file holds what people said to the bot.
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(body))
            os.replace(temp, self.path)
        except OSError as exc:
            log.warning("could not write history file %s: %s", self.path, exc)


def _is_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("role"), str)
        and isinstance(entry.get("content"), str)
        and isinstance(entry.get("timestamp"), int)
    )
