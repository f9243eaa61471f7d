"""What the relay tells watchers (the dashboard) as it happens, without waiting on them.

The relay must never slow down for someone watching it: `publish` is synchronous, costs a
dict lookup when nobody listens, and puts the event into each subscriber's bounded queue,
dropping that subscriber's oldest event when it is full (a watcher that falls behind loses
detail, never the relay's time, and is told how many it missed). Events are hints for
display; the truth stays in the store, which a watcher re-reads when it needs exactness.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

EventKind = Literal["inbound", "output", "participants", "conversation", "operator"]
"""inbound: a platform message was accepted; output: a bot's output reached the relay;
participants: a group's bots were listed again; conversation: a tracked conversation
changed; operator: an operator acted (cancel, release, pause, resume)."""

DEFAULT_QUEUE = 1000


@dataclass(frozen=True, slots=True)
class RelayEvent:
    kind: EventKind
    at: datetime
    data: dict[str, Any]


@dataclass(slots=True, eq=False)
class Subscription:
    """One watcher's bounded queue; `missed` counts events dropped because it was full."""

    queue: asyncio.Queue[RelayEvent]
    on_close: Callable[[Subscription], None]
    missed: int = 0

    def offer(self, event: RelayEvent) -> None:
        if self.queue.full():
            self.queue.get_nowait()
            self.missed += 1
        self.queue.put_nowait(event)

    async def next(self) -> RelayEvent:
        return await self.queue.get()

    def close(self) -> None:
        self.on_close(self)


@dataclass(slots=True)
class RelayEvents:
    """The relay's one event bus; `subscribe` / `Subscription.close` bracket a watcher."""

    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    _subscribers: list[Subscription] = field(default_factory=list)

    @property
    def watched(self) -> bool:
        return bool(self._subscribers)

    def subscribe(self, maxsize: int = DEFAULT_QUEUE) -> Subscription:
        subscription = Subscription(asyncio.Queue(maxsize), self._unsubscribe)
        self._subscribers.append(subscription)
        return subscription

    def _unsubscribe(self, subscription: Subscription) -> None:
        if subscription in self._subscribers:
            self._subscribers.remove(subscription)

    def publish(self, kind: EventKind, /, **data: Any) -> None:
        if not self._subscribers:
            return
        event = RelayEvent(kind, self.clock(), data)
        for subscription in self._subscribers:
            subscription.offer(event)
