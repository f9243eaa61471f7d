"""The durable, ordered, per-lane outbox between the relay and the platforms.

Every output is written to the store before the hub's delivery is acked, then a worker per
lane (one chat, or one thread of it) posts the lane's items strictly in order. While a reply
streams, its deltas become edits of the platform messages showing it (a long reply streams
across several parts), at most one round of edits per `min_edit_interval` and only the newest
text (older deltas are superseded, never queued behind each other); the final replaces the
preview, and deletes the preview parts it no longer needs where the platform can delete. A
transient platform failure (429, network) waits — honouring the platform's retry-after — and
retries the same item, so order holds and nothing is dropped; a permanent one is logged and
skipped.
"""

from __future__ import annotations

import asyncio
import enum
import hashlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

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


class _Failed(enum.Enum):
    """What `_attempt` returns when a platform call failed for good."""

    FAILED = "failed"


_FAILED = _Failed.FAILED


def text_digest(text: str) -> str:
    """A short, process-independent fingerprint of what one platform message shows."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


@dataclass(slots=True)
class StreamedMessages:
    """The platform messages a streaming reply is shown in, kept in the message map.

    `shown[i]` fingerprints the text message `i` shows now, so a preview edits only the
    parts that changed, and the final knows which preview parts it no longer fills.
    """

    chat_id: str
    thread_id: str | None
    message_ids: list[str]
    shown: list[str]

    def ref(self, index: int) -> PlatformRef:
        return PlatformRef(self.chat_id, self.message_ids[index], self.thread_id)

    def to_record(self) -> dict[str, Any]:
        return {"chat_id": self.chat_id, "thread_id": self.thread_id,
                "message_ids": self.message_ids, "shown": self.shown}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> StreamedMessages:
        ids = record.get("message_ids")
        if not isinstance(ids, list):  # written by a version that streamed one message
            ids = [record["message_id"]] if record.get("message_id") else []
        shown = record.get("shown") if isinstance(record.get("shown"), list) else []
        shown = [*shown, *[""] * (len(ids) - len(shown))][: len(ids)]
        return cls(str(record.get("chat_id", "")), record.get("thread_id"),
                   [str(i) for i in ids], [str(d) for d in shown])


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

    async def put(self, item: OutboxItem, *, once: str | None = None) -> bool:
        """Durably queue an item; returns once it is in the store (safe to ack).

        With `once` (a `seen` key), the item is queued only if the key is new, atomically
        with remembering it; False means it had been queued before.
        """
        item.created_at = item.created_at or self.clock()
        if await self.store.append(item, once=once, now=self.clock()) is None:
            return False
        self._enqueue(item)
        return True

    def adopt(self, items: list[OutboxItem]) -> None:
        """Send items another concern already wrote to the outbox store (held outputs)."""
        for item in items:
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
        stream = await self._stream(item.run_id)
        for index, part in enumerate(item.parts):
            if item.sent[index] is not None:
                continue
            out = self._outbound(binding, item, part, index)
            if stream is not None and index < len(stream.message_ids):
                ref = stream.ref(index)
                if await self._attempt(lambda o=out, r=ref: adapter.edit(r, o), lane) is _FAILED:
                    return
            else:
                ref = await self._attempt(lambda o=out: adapter.send(o), lane)
                if ref is _FAILED or ref is None:
                    return
            item.sent[index] = ref.message_id
            # Marked before anything else happens, the last part too: a crash from here on
            # resumes after this part instead of posting it again.
            await self.store.record_part(item.id, index, ref.message_id)
            if self.on_sent is not None and (stream is None or index >= len(stream.message_ids)):
                await self.on_sent(item, index, ref)
        if stream is not None and len(stream.message_ids) > len(item.parts):
            await self._drop_leftovers(lane, adapter, item, stream)

    async def _drop_leftovers(
        self, lane: Lane, adapter: Adapter, item: OutboxItem, stream: StreamedMessages
    ) -> None:
        """A final shorter than its preview: remove the preview parts it no longer fills."""
        if not adapter.capabilities.can_delete:
            log.info("outbox: %s cannot delete; %d preview part(s) of a reply stay",
                     lane.channel, len(stream.message_ids) - len(item.parts))
            return
        while len(stream.message_ids) > len(item.parts):
            ref = stream.ref(len(stream.message_ids) - 1)
            if await self._attempt(lambda r=ref: adapter.delete(r), lane) is _FAILED:
                return
            stream.message_ids.pop()
            stream.shown.pop()
            await self._save_stream(item.run_id, stream)

    async def _preview(
        self,
        lane: Lane,
        adapter: Adapter,
        binding: Binding,
        item: OutboxItem,
        queue: deque[OutboxItem],
    ) -> None:
        """Show the text streamed so far: edit the parts that changed, post the new ones."""
        if not adapter.capabilities.can_edit or not item.run_id or not item.parts:
            return  # adapters that cannot edit get the final only
        if self._superseded(item, queue):
            return
        loop = asyncio.get_running_loop()
        stream = await self._stream(item.run_id)
        if stream is not None:
            wait = self._last_edit.get(item.run_id, 0.0) + adapter.capabilities.min_edit_interval
            if (delay := wait - loop.time()) > 0:
                await asyncio.sleep(delay)
                if self._superseded(item, queue):
                    return
        for index, part in enumerate(item.parts):
            digest = text_digest(part)
            if stream is not None and index < len(stream.message_ids):
                if stream.shown[index] == digest:
                    continue
                out = self._outbound(binding, item, part, index)
                ref = stream.ref(index)
                if await self._attempt(lambda o=out, r=ref: adapter.edit(r, o), lane) is _FAILED:
                    return
            else:
                out = self._outbound(binding, item, part, index)
                ref = await self._attempt(lambda o=out: adapter.send(o), lane)
                if ref is _FAILED or ref is None:
                    return
                if stream is None:
                    stream = StreamedMessages(ref.chat_id, ref.thread_id, [], [])
                stream.message_ids.append(ref.message_id)
                stream.shown.append("")
                if self.on_sent is not None:
                    await self.on_sent(item, index, ref)
            stream.shown[index] = digest
            await self._save_stream(item.run_id, stream)
        self._last_edit[item.run_id] = loop.time()

    async def _stream(self, run_id: str | None) -> StreamedMessages | None:
        if not run_id:
            return None
        found = await self.message_map.get(f"stream:{run_id}")
        return StreamedMessages.from_record(found) if found else None

    async def _save_stream(self, run_id: str | None, stream: StreamedMessages) -> None:
        await self.message_map.put(f"stream:{run_id}", stream.to_record(), self.clock())

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

    async def _attempt(self, call: Callable[[], Awaitable[T]], lane: Lane) -> T | _Failed:
        """Run one platform call until it succeeds or fails for good (`_FAILED`).

        Transient failures wait (the platform's retry-after when it gave one) and retry the
        same call, which is what keeps a lane in order through a 429 or an outage.
        """
        backoff = Backoff(initial=self.retry_initial, maximum=self.retry_maximum)
        while True:
            try:
                return await call()
            except PermanentSendError as exc:
                log.error("outbox: %s refused an output for good: %s", lane.channel, exc)
                return _FAILED
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
                    return _FAILED
                delay = backoff.next_delay()
                log.warning(
                    "outbox: %s failed (%s: %s); retrying in %.1fs",
                    lane.channel, type(exc).__name__, exc, delay,
                )
                await asyncio.sleep(delay)
