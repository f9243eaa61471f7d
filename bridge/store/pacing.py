"""Send budgets: how often one account may post into one chat, shared by every instance.

A platform publishes its limits (Telegram: 20 messages a minute in a group, about one a
second in a chat, about 30 a second for a bot; Slack: about one a second in a channel) and
answers 429 "retry after" past them. Waiting only once told costs a refused call per burst
and, in a group, minutes of silence; pacing from the published limits keeps under them.

A budget is a sliding window — at most `limit` sends in any `window` seconds under one key —
and one send spends from several at once (the chat's, the group's, the bot's). Spending is
atomic across instances sharing the store, so N instances together stay under the limit:
on Redis one script, timed by the Redis server's clock (instances need not agree on the
time). The SQLite store serves one instance, which keeps its windows in its memory: after a
restart the platform's own 429, which the outbox honours, covers the few seconds it forgot.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Budget:
    """At most `limit` sends in any `window` seconds, under `key` (whose sends these are:
    e.g. `telegram:main|chat:-1001234`)."""

    key: str
    limit: int
    window: float

    def __post_init__(self) -> None:
        if self.limit < 1 or self.window <= 0:
            raise ValueError(f"a budget needs limit >= 1 and window > 0, got {self}")


class PacingStore(ABC):
    """Sliding-window send budgets (see the module doc)."""

    @abstractmethod
    async def take(self, budgets: Sequence[Budget]) -> float:
        """Spend one send from every budget if each has room, atomically, and return 0;
        else spend nothing and return the seconds until they all may have room."""

    @abstractmethod
    async def room(self, budgets: Sequence[Budget]) -> float:
        """The seconds until one send fits every budget (0: now), spending nothing."""


class MemoryPacingStore(PacingStore):
    """Budgets in this process (the memory and SQLite stores: one instance)."""

    __slots__ = ("_clock", "_sent")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._sent: dict[str, deque[float]] = {}

    async def take(self, budgets: Sequence[Budget]) -> float:
        now = self._clock()
        wait = self._wait(budgets, now)
        if wait == 0:
            for budget in budgets:
                self._sent.setdefault(budget.key, deque()).append(now)
        return wait

    async def room(self, budgets: Sequence[Budget]) -> float:
        return self._wait(budgets, self._clock())

    def _wait(self, budgets: Sequence[Budget], now: float) -> float:
        wait = 0.0
        for budget in budgets:
            sent = self._sent.get(budget.key)
            if sent is None:
                continue
            while sent and sent[0] <= now - budget.window:
                sent.popleft()
            if not sent:
                del self._sent[budget.key]  # an idle chat costs nothing
            elif len(sent) >= budget.limit:
                # The send that frees a place is the one `limit` back from the newest.
                wait = max(wait, sent[len(sent) - budget.limit] + budget.window - now)
        return wait
