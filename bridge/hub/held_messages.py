"""Human messages held during the reconnect grace, until the bot they are for is back.

A message whose chosen responder is a bot the hub awaits (`startup_grace.py`) is accepted
at once — `channel.inbound` is answered, so the bridge neither waits nor retries — and then
held. Each binding has its own queue, released in order by its own task: the head goes as
soon as every awaited bot it is for is back (or the grace is over), and is then routed
afresh, exactly as if it had just arrived; only if its bot is still missing does the chat
get the "no bot is available" notice. Later messages of a binding that holds some wait
behind them, so a chat keeps its order; other bindings, and the link's read loop, never wait.

A queue holds at most `held_max_per_binding` messages; beyond that a message is routed at
once (with a log line). Held messages are kept in `hub.db` too, so a crash during the grace
holds them again on the next start instead of losing them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bridge.hub.sessions import ChannelSession
from bridge.hub.startup_grace import StartupGrace
from bridge.hub.storage import HubDatabase

log = logging.getLogger(__name__)


@dataclass(slots=True)
class HumanMessage:
    """What the hub needs of an accepted `channel.inbound` to route it (now or later)."""

    session: ChannelSession
    thread_id: str | None
    msg_id: str | None
    author: str
    channel: dict[str, Any]
    text: str
    mentions: list[str]
    routing: dict[str, Any] | None
    """The inbound's `routing` field as sent (already validated)."""
    observe: bool
    protocol: dict[str, Any] | None
    timestamp: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session.id, "thread_id": self.thread_id, "msg_id": self.msg_id,
            "author": self.author, "channel": self.channel, "text": self.text,
            "mentions": self.mentions, "routing": self.routing, "observe": self.observe,
            "protocol": self.protocol, "timestamp": self.timestamp,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], session: Callable[[str], ChannelSession | None]
                  ) -> HumanMessage | None:
        """The message again; None when its session is no longer known."""
        found = session(data["session_id"])
        if found is None:
            return None
        return cls(found, data["thread_id"], data["msg_id"], data["author"], data["channel"],
                   data["text"], data["mentions"], data["routing"], data["observe"],
                   data["protocol"], data["timestamp"])


@dataclass(slots=True)
class _Held:
    key: str
    message: HumanMessage
    awaited: frozenset[str]


@dataclass(slots=True)
class _Queue:
    items: deque[_Held] = field(default_factory=deque)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


Release = Callable[[HumanMessage], Awaitable[None]]


class HeldMessages:
    def __init__(self, db: HubDatabase, grace: StartupGrace, limit: int,
                 release: Release) -> None:
        self._db = db
        self._grace = grace
        self._limit = limit
        self._release = release
        """Routes a released message (the dispatcher's `route_human`)."""
        self._queues: dict[str, _Queue] = {}

    def holding(self, binding_id: str) -> bool:
        """Messages of this binding wait already: a new one must queue behind them."""
        return binding_id in self._queues

    def hold(self, message: HumanMessage, awaited: frozenset[str]) -> bool:
        """Hold a message for these bots; False when the binding's queue is full."""
        binding_id = message.session.binding_id
        queue = self._queues.get(binding_id)
        if queue is not None and len(queue.items) >= self._limit:
            log.warning("binding %s: %d messages already wait for reconnecting bots; message "
                        "%s is routed now", binding_id, self._limit, message.msg_id)
            return False
        key = uuid.uuid4().hex
        body = json.dumps({"message": message.to_dict(), "awaited": sorted(awaited)},
                          separators=(",", ":"))
        self._db.writes.add(
            "INSERT INTO held_messages (hold_key, binding_id, body, created_at)"
            " VALUES (?, ?, ?, ?)", (key, binding_id, body, time.time()))
        self._enqueue(_Held(key, message, awaited))
        log.info("binding %s: message %s waits for %d reconnecting bot(s)", binding_id,
                 message.msg_id, len(awaited))
        return True

    def _enqueue(self, held: _Held) -> None:
        binding_id = held.message.session.binding_id
        queue = self._queues.get(binding_id)
        if queue is None:
            queue = self._queues[binding_id] = _Queue()
            queue.task = asyncio.create_task(self._drain(binding_id, queue),
                                             name=f"held-{binding_id}")
        queue.items.append(held)
        queue.wake.set()

    def restore(self, session: Callable[[str], ChannelSession | None]) -> int:
        """Hold again what a previous run held when it stopped; returns how many.

        Call it once the grace has started: a message is released as soon as none of its
        bots is awaited, and before the start nobody is.
        """
        count = 0
        for key, binding_id, body in self._db.rows(
            "SELECT hold_key, binding_id, body FROM held_messages ORDER BY id"
        ):
            try:
                data = json.loads(body)
                message = HumanMessage.from_dict(data["message"], session)
                awaited = frozenset(str(bot_uuid) for bot_uuid in data["awaited"])
            except (ValueError, KeyError, TypeError) as exc:
                message, why = None, f"unreadable ({exc})"
            else:
                why = "its session is no longer known"
            if message is None:
                log.error("binding %s: held message %s dropped: %s", binding_id, key, why)
                self._forget(key)
                continue
            self._enqueue(_Held(key, message, awaited))
            count += 1
        if count:
            log.info("%d held message(s) restored; released as their bots come back", count)
        return count

    def wake(self) -> None:
        """A bot came online or the grace ended: heads of queues may go now."""
        for queue in self._queues.values():
            queue.wake.set()

    def _ready(self, held: _Held) -> bool:
        return not any(self._grace.awaits(bot_uuid) for bot_uuid in held.awaited)

    async def _drain(self, binding_id: str, queue: _Queue) -> None:
        try:
            while queue.items:
                head = queue.items[0]
                while not self._ready(head):
                    queue.wake.clear()
                    await queue.wake.wait()
                queue.items.popleft()
                self._forget(head.key)
                try:
                    await self._release(head.message)
                except Exception:
                    log.exception("binding %s: routing held message %s failed", binding_id,
                                  head.message.msg_id)
        finally:
            if self._queues.get(binding_id) is queue:
                del self._queues[binding_id]

    def _forget(self, key: str) -> None:
        self._db.writes.add("DELETE FROM held_messages WHERE hold_key = ?", (key,))

    def __len__(self) -> int:
        return sum(len(queue.items) for queue in self._queues.values())

    async def close(self) -> None:
        """Stop releasing; what still waits stays in `hub.db` for the next start."""
        tasks = [queue.task for queue in self._queues.values() if queue.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._queues.clear()
