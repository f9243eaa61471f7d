"""The bots panel: which bots each bound group has, who is online, who is replying right now.

Who is in a group and online is the store's (`RelayState.group_bots`, refreshed from the hub
on every participants change), so every instance shows the same. What a bot is doing is seen
in the relay's events on this instance: a streamed delta means it is replying, a final ends
that, and a bot that goes offline while replying — or whose run the hub ends because its
socket closed ("went offline mid-reply") — shows as *dropped* until it is heard from again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from bridge.core.events import RelayEvent
from bridge.core.relay_state import GroupBots

REPLYING_FOR = timedelta(minutes=5)
"""A run with no event for this long is no longer shown as replying (its end was missed)."""
DROPPED_FOR = timedelta(minutes=10)
"""How long a bot that dropped mid-reply is flagged when nothing else is heard from it."""
MAX_BOTS = 10_000
"""Bots remembered (a bounded map, whatever a hub announces)."""


@dataclass(slots=True)
class BotSeen:
    last_activity: datetime | None = None
    runs: dict[str, datetime] = field(default_factory=dict)
    """Runs streaming now: run id → last delta."""
    dropped_at: datetime | None = None
    note: str | None = None


class BotActivity:
    def __init__(self) -> None:
        self._bots: dict[str, BotSeen] = {}

    def _bot(self, name: str) -> BotSeen:
        key = name.casefold()
        seen = self._bots.get(key)
        if seen is None:
            if len(self._bots) >= MAX_BOTS:
                self._bots.pop(next(iter(self._bots)))
            seen = self._bots[key] = BotSeen()
        return seen

    def see(self, event: RelayEvent) -> bool:
        """Take one relay event; True when a bot's shown state may have changed."""
        data = event.data
        if event.kind == "output":
            seen = self._bot(str(data.get("bot") or ""))
            seen.last_activity = event.at
            run_id, kind = data.get("run_id"), data.get("kind")
            if kind == "delta" and isinstance(run_id, str):
                seen.runs[run_id] = event.at
                seen.dropped_at = None
            elif kind in ("final", "error", "aborted"):
                if isinstance(run_id, str):
                    seen.runs.pop(run_id, None)
                error = data.get("error")
                if kind == "error" and isinstance(error, str) and "offline" in error:
                    seen.dropped_at, seen.note = event.at, error
                elif kind == "error":
                    seen.note = f"last reply failed: {error or 'no reason given'}"
                else:
                    seen.dropped_at, seen.note = None, None
            return True
        if event.kind == "participants":
            online = {str(name).casefold() for name in data.get("online") or ()}
            for name in data.get("names") or ():
                seen = self._bot(str(name))
                if str(name).casefold() not in online and seen.runs:
                    seen.runs.clear()
                    seen.dropped_at = event.at
                    seen.note = "went offline while replying"
            return True
        return False

    def rows(self, groups: dict[str, GroupBots], now: datetime) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for group, bots in sorted(groups.items()):
            for name in bots.names:
                seen = self._bots.get(name.casefold(), BotSeen())
                online = name in bots.online
                replying = any(now - at < REPLYING_FOR for at in seen.runs.values())
                if seen.dropped_at is not None and now - seen.dropped_at < DROPPED_FOR:
                    state = "dropped"
                elif not online:
                    state = "offline"
                elif replying:
                    state = "replying"
                else:
                    state = "idle"
                rows.append({
                    "group": group,
                    "name": name,
                    "online": online,
                    "state": state,
                    "last_activity": seen.last_activity.isoformat()
                    if seen.last_activity else None,
                    "note": seen.note,
                })
        return rows
