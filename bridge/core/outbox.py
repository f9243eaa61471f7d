"""The durable, ordered, per-lane outbox between the relay and the platforms.

Every output is written to the store before the hub's delivery is acked, then a worker per
lane (one chat, or one thread of it) posts the lane's items strictly in order. While a reply
streams, its deltas become edits of one platform message, at most one edit per
`min_edit_interval` and only the newest text (older deltas are superseded, never queued
behind each other); the final replaces the preview. A transient platform failure (429,
network) waits — honouring the platform's retry-after — and retries the same item, so order
holds and nothing is dropped; a permanent one is logged and skipped.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from bridge.background import Background
from bridge.core.adapter import Adapter, PermanentSendError, SendError
from bridge.core.binding import Binding
from bridge.core.model import Outbound, OutboundKind, PlatformRef
from bridge.retry import Backoff
from bridge.store.relay import MessageMapStore, OutboxItem, OutboxStore

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
T = TypeVar("T")

UNCLASSIFIED_ATTEMPTS = 8
"""Tries for a platform call failing with an error the adapter did not classify."""


@dataclass(frozen=True, slots=True)
class Lane:
    """One ordered stream of output: a chat, or one thread of it."""

    channel: str
    chat_id: str
    thread_id: str | None = None

    @property
    def key(self) -> str:
        return f"{self.channel}|{self.chat_id}|{self.thread_id or ''}"

    @classmethod
    def from_key(cls, key: str) -> Lane:
        channel, chat_id, thread = key.split("|", 2)
        return cls(channel, chat_id, thread or None)


Resolver = Callable[[Lane], tuple[Adapter, Binding] | None]
SentCallback = Callable[[OutboxItem, int, PlatformRef], Awaitable[None]]


class Outbox:
    def __init__(
        self,
        store: OutboxStore,
        message_map: MessageMapStore,
        resolve: Resolver,
        *,
        clock: Clock,
        on_sent: SentCallback | None = None,
        retry_initial: float = 0.5,
        retry_maximum: float = 60.0,
    ) -> None:
        self.store = store
        self.message_map = message_map
        self.resolve = resolve
        self.clock = clock
        self.on_sent = on_sent
        self.retry_initial = retry_initial
        self.retry_maximum = retry_maximum
        self._lanes: dict[str, deque[OutboxItem]] = {}
        self._wakeups: dict[str, asyncio.Event] = {}
        self._workers = Background("outbox")
        self._last_edit: dict[str, float] = {}
        self._idle = asyncio.Event()
        self._idle.set()

    async def start(self) -> None:
        """Resume everything a previous run left queued."""
        pending = await self.store.pending()
        for item in pending:
            self._enqueue(item)
        if pending:
            log.info("outbox: resuming %d queued output(s)", len(pending))

    async def stop(self) -> None:
        await self._workers.cancel_all()

    async def put(self, item: OutboxItem) -> None:
        """Durably queue an item; returns once it is in the store (safe to ack)."""
        item.created_at = item.created_at or self.clock()
        await self.store.append(item)
        self._enqueue(item)

    def _enqueue(self, item: OutboxItem) -> None:
        queue = self._lanes.get(item.lane)
        if queue is None:
            queue = self._lanes[item.lane] = deque()
            self._wakeups[item.lane] = asyncio.Event()
            self._workers.spawn(self._work(item.lane), name=f"outbox:{item.lane}")
        queue.append(item)
        self._idle.clear()
        self._wakeups[item.lane].set()

    def pending_count(self) -> int:
        return sum(len(queue) for queue in self._lanes.values())

    async def wait_idle(self) -> None:
        """Until every queued item has been handled (tests and orderly shutdown)."""
        while self.pending_count():
            self._idle.clear()
            await self._idle.wait()

    # ------------------------------------------------------------------ worker
    async def _work(self, lane_key: str) -> None:
        queue = self._lanes[lane_key]
        wakeup = self._wakeups[lane_key]
        lane = Lane.from_key(lane_key)
        while True:
            if not queue:
                if not self.pending_count():
                    self._idle.set()
                wakeup.clear()
                await wakeup.wait()
                continue
            item = queue[0]
            try:
                await self._handle(lane, item, queue)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("outbox: giving up on an item for %s", lane_key)
            queue.popleft()
            await self.store.complete(item.id)

    def _superseded(self, item: OutboxItem, queue: deque[OutboxItem]) -> bool:
        """A later item of the same run makes this delta's preview pointless."""
        return any(later.run_id == item.run_id for later in list(queue)[1:])

    async def _handle(self, lane: Lane, item: OutboxItem, queue: deque[OutboxItem]) -> None:
        resolved = self.resolve(lane)
        if resolved is None:
            log.warning("outbox: no adapter/binding for %s any more; dropping an output", lane)
            return
        adapter, binding = resolved
        if item.kind == OutboundKind.DELTA:
            await self._preview(lane, adapter, binding, item, queue)
            return
        stream_ref = await self._stream_ref(item.run_id)
        for index, part in enumerate(item.parts):
            if item.sent[index] is not None:
                continue
            out = self._outbound(binding, item, part, index)
            if index == 0 and stream_ref is not None:
                await self._attempt(lambda o=out: adapter.edit(stream_ref, o), lane)
                ref = stream_ref
            else:
                ref = await self._attempt(lambda o=out: adapter.send(o), lane)
            if ref is None:
                return
            item.sent[index] = ref.message_id
            if index + 1 < len(item.parts):
                # Only a part with more to follow needs its own durable mark: the last
                # one is covered by `complete`, one write later.
                await self.store.record_part(item.id, index, ref.message_id)
            if self.on_sent is not None:
                await self.on_sent(item, index, ref)

    async def _preview(
        self,
        lane: Lane,
        adapter: Adapter,
        binding: Binding,
        item: OutboxItem,
        queue: deque[OutboxItem],
    ) -> None:
        if not adapter.capabilities.can_edit or not item.run_id or not item.parts:
            return  # adapters that cannot edit get the final only
        if self._superseded(item, queue):
            return
        out = self._outbound(binding, item, item.parts[0], 0)
        ref = await self._stream_ref(item.run_id)
        loop = asyncio.get_running_loop()
        if ref is None:
            ref = await self._attempt(lambda: adapter.send(out), lane)
            if ref is None:
                return
            await self.message_map.put(
                f"stream:{item.run_id}",
                {"chat_id": ref.chat_id, "message_id": ref.message_id, "thread_id": ref.thread_id},
                self.clock(),
            )
            if self.on_sent is not None:
                await self.on_sent(item, 0, ref)
        else:
            wait = self._last_edit.get(item.run_id, 0.0) + adapter.capabilities.min_edit_interval
            if (delay := wait - loop.time()) > 0:
                await asyncio.sleep(delay)
                if self._superseded(item, queue):
                    return
            await self._attempt(lambda: adapter.edit(ref, out), lane)
        self._last_edit[item.run_id] = loop.time()

    async def _stream_ref(self, run_id: str | None) -> PlatformRef | None:
        if not run_id:
            return None
        found = await self.message_map.get(f"stream:{run_id}")
        if not found:
            return None
        return PlatformRef(found["chat_id"], found["message_id"], found.get("thread_id"))

    @staticmethod
    def _outbound(binding: Binding, item: OutboxItem, text: str, index: int) -> Outbound:
        return Outbound(
            binding=binding,
            thread_id=Lane.from_key(item.lane).thread_id or binding.thread,
            conversation=item.conversation,
            sender_label=item.sender_label,
            text=text,
            kind=OutboundKind(item.kind),
            run_id=item.run_id,
            reply_to=item.reply_to if index == 0 else None,
            part=index + 1,
            parts=len(item.parts),
            protocol=item.protocol,
        )

    async def _attempt(self, call: Callable[[], Awaitable[T]], lane: Lane) -> T | None:
        """Run one platform call until it succeeds or fails for good.

        Transient failures wait (the platform's retry-after when it gave one) and retry the
        same call, which is what keeps a lane in order through a 429 or an outage.
        """
        backoff = Backoff(initial=self.retry_initial, maximum=self.retry_maximum)
        while True:
            try:
                return await call()
            except PermanentSendError as exc:
                log.error("outbox: %s refused an output for good: %s", lane.channel, exc)
                return None
            except SendError as exc:
                delay = backoff.next_delay(exc.retry_after)
                log.warning(
                    "outbox: %s: %s; retrying in %.1fs", lane.channel, exc, delay
                )
                await asyncio.sleep(delay)
            except NotImplementedError:
                raise
            except Exception as exc:
                # Not a failure the adapter classified: most likely a bug, so retry a few
                # times (it may still be a passing fault) rather than block the lane forever.
                if backoff.attempts >= UNCLASSIFIED_ATTEMPTS:
                    log.exception("outbox: %s keeps failing; giving up on an output", lane.channel)
                    return None
                delay = backoff.next_delay()
                log.warning(
                    "outbox: %s failed (%s: %s); retrying in %.1fs",
                    lane.channel, type(exc).__name__, exc, delay,
                )
                await asyncio.sleep(delay)
