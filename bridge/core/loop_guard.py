"""Stops bots from talking a chat to death.

Per lane, at most `max_messages` bot-authored messages within `window_seconds` while no human
speaks. Past that, bot output in that chat is held back until a human writes again, and the
chat is told once.
"""

from __future__ import annotations

from collections import deque
from enum import Enum

from bridge.core.binding import LoopGuard


class Verdict(Enum):
    ALLOW = "allow"
    TRIPPED = "tripped"
    """This message crossed the limit: suppress it and post the one notice."""
    PAUSED = "paused"
    """Already paused: suppress silently."""


class LoopGuardState:
    def __init__(self) -> None:
        self._recent: dict[str, deque[float]] = {}
        self._paused: set[str] = set()

    def human_spoke(self, lane: str) -> None:
        self._recent.pop(lane, None)
        self._paused.discard(lane)

    def is_paused(self, lane: str) -> bool:
        return lane in self._paused

    def bot_spoke(self, lane: str, policy: LoopGuard, now: float) -> Verdict:
        if lane in self._paused:
            return Verdict.PAUSED
        recent = self._recent.setdefault(lane, deque())
        while recent and recent[0] <= now - policy.window_seconds:
            recent.popleft()
        if len(recent) >= policy.max_messages:
            self._paused.add(lane)
            recent.clear()
            return Verdict.TRIPPED
        recent.append(now)
        return Verdict.ALLOW
