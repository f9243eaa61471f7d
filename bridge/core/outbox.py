"""The durable, ordered, per-lane outbox between the relay and the platforms.

Every output is written to the store before the hub's delivery is acked, then a worker per
lane (one chat, or one thread of it) posts the lane's items strictly in order. (On a
platform that posts in process, a reply to a person in an idle lane is posted at once
instead, before the ack: `post_now`.) While a reply
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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from bridge.background import Background
from bridge.core.adapter import Adapter, PermanentSendError, SendError
from bridge.core.binding import Binding
from bridge.core.cards import Card, card_post_key
from bridge.core.lease_keeper import LeaseKeeper, LeaseLost
from bridge.core.model import Outbound, OutboundKind, PlatformRef
from bridge.core.pacing import Pacer
from bridge.logs import set_log_context
from bridge.metrics import BridgeMetrics
from bridge.retry import Backoff
from bridge.store.leases import Lease, LeaseStore, StaleLease
from bridge.store.memory.relay import MemoryLeaseStore
from bridge.store.relay import MessageMapStore, OutboxItem, OutboxStore

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
T = TypeVar("T")

UNCLASSIFIED_ATTEMPTS = 8
"""Tries for a platform call failing with an error the adapter did not classify."""

LANE_LEASE_TTL = 15.0
"""Seconds a lane stays with an instance that stopped renewing (a kill -9) before another
instance takes it over."""
LANE_LINGER = 5.0
"""Seconds a worker keeps its empty lane, so a busy chat keeps one lease."""
LINGER_POLL = 0.5
"""While lingering, how often to look for items another instance queued."""
ORPHAN_SCAN = 5.0
"""How often to look for queued lanes nobody works."""
PENDING_BATCH = 50

LAST_EDITS_KEPT = 10_000
"""Most runs whose edit pacing one outbox remembers: one per run streaming now, with room for
runs whose bot died before its final (the oldest is forgotten first)."""


@dataclass(frozen=True, slots=True)
class Lane:
    """One ordered stream of output: a chat, or one thread of it."""

    channel: str
    chat_id: str
    thread_id: str | None = None
    key: str = field(init=False, repr=False, compare=False)
    """`channel|chat|thread`, the lane's name in the store: built once, it is read several
    times for every message."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.channel}|{self.chat_id}|{self.thread_id or ''}")

    @classmethod
    def from_key(cls, key: str) -> Lane:
        channel, chat_id, thread = key.split("|", 2)
        return cls(channel, chat_id, thread or None)


class _Failed(enum.Enum):
    """What `_attempt` returns when a platform call failed for good."""

    FAILED = "failed"


_FAILED = _Failed.FAILED


async def _set_within(event: asyncio.Event, seconds: float) -> bool:
    """Whether `event` is set within `seconds`. A timer that sets the event, not
    `asyncio.timeout`: every lingering lane waits like this once per item, and a timeout
    scope (a cancel scope, a task lookup, a reschedule) costs several times as much."""
    timed_out = False

    def expire() -> None:
        nonlocal timed_out
        if not event.is_set():
            timed_out = True
            event.set()

    timer = asyncio.get_running_loop().call_later(seconds, expire)
    try:
        await event.wait()
    finally:
        timer.cancel()
    if timed_out:
        event.clear()  # only the timer set it; whatever sets it from now on is real
    return not timed_out


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


class Handled(Enum):
    """What handling one item left its lane worker to do."""

    DEQUEUED = "dequeued"
    """Posted, and the write that recorded its last part took it off the queue too."""
    POSTED = "posted"
    """Posted (a preview, a final whose leftover preview parts were dealt with): the worker
    takes it off the queue."""
    GIVEN_UP = "given up"
    """Not posted — failed for good, or its chat is no longer bound: the worker takes it
    off the queue all the same (the failure was logged and counted)."""


Resolver = Callable[[Lane], tuple[Adapter, Binding] | None]
SentRecords = Callable[[OutboxItem, PlatformRef], dict[str, dict[str, Any]]]
CardPosted = Callable[[str], Awaitable[None]]
"""The message-map records to keep for a platform message the outbox posted (e.g. for the
own-echo filter); written in the same transaction that marks the part posted."""


class Outbox:
    """Sends every lane's items in order; one instance per lane at a time (a lane lease).

    The store is the queue: a lane worker reads the lane's pending items from it, whoever
    queued them (this instance, another one, or a previous run), so a second instance or a
    restart after kill -9 carries on where the last holder stopped. A worker keeps its lane
    for `linger` seconds after it empties (checking the store meanwhile), so a busy chat
    does not take and give back its lease for every message.
    """

    def __init__(
        self,
        store: OutboxStore,
        message_map: MessageMapStore,
        resolve: Resolver,
        *,
        clock: Clock,
        leases: LeaseStore | None = None,
        holder: str = "bcn-bridge",
        sent_records: SentRecords | None = None,
        retry_initial: float = 0.5,
        retry_maximum: float = 60.0,
        lease_ttl: float = LANE_LEASE_TTL,
        linger: float = LANE_LINGER,
        orphan_scan: float = ORPHAN_SCAN,
        metrics: BridgeMetrics | None = None,
        card_posted: CardPosted | None = None,
        pacer: Pacer | None = None,
    ) -> None:
        self.metrics = metrics or BridgeMetrics()
        self.pacer = pacer
        """Waits for room in the platform's send limits before each call (None: unpaced)."""
        self.card_posted = card_posted
        """Told each card's key once its post is on record (see `_card_on_record`)."""
        self.store = store
        self.message_map = message_map
        self.resolve = resolve
        self.clock = clock
        self.leases: LeaseStore = leases or MemoryLeaseStore()
        """Lane leases; without a shared store, this instance's own (always granted)."""
        self.holder = holder
        self.sent_records = sent_records
        self.retry_initial = retry_initial
        self.retry_maximum = retry_maximum
        self.lease_ttl = lease_ttl
        self.linger = linger
        self.orphan_scan = orphan_scan
        self._workers = Background("outbox")
        self._working: dict[str, asyncio.Event] = {}
        """Lanes this instance works now → their wake-up (new item queued here)."""
        self._pending: dict[int, str] = {}
        """Item id → lane, for the items this instance knows are queued and not done."""
        self._last_edit: dict[str, float] = {}
        """Run id → when its preview was last edited (edits are paced per run); an entry goes
        when its run's final is handled, and at most `LAST_EDITS_KEPT` are kept."""
        self._idle = asyncio.Event()
        self._idle.set()

    async def start(self) -> None:
        """Resume everything a previous run (or a dead instance) left queued."""
        pending = await self.store.pending()
        self._pending.update((item.id, item.lane) for item in pending)
        if pending:
            log.info("outbox: resuming %d queued output(s)", len(pending))
        await self._adopt_lanes()
        self._workers.spawn(self._scan_forever(), name="outbox-scan")

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
        self.adopt([item])
        return True

    def adopt(self, items: list[OutboxItem]) -> None:
        """Send items written to the outbox store (by `put`, or by another concern: a bot's
        output queued through the loop guard, held outputs released)."""
        for item in items:
            self._pending[item.id] = item.lane
            self._kick(item.lane)
            self.metrics.queued(Lane.from_key(item.lane).channel, item.kind)

    def _kick(self, lane: str) -> None:
        self._idle.clear()
        wakeup = self._working.get(lane)
        if wakeup is not None:
            wakeup.set()
            return
        self._working[lane] = asyncio.Event()
        self._workers.spawn(self._work(lane), name=f"outbox:{lane}")

    @staticmethod
    def may_post_now(adapter: Adapter, item: OutboxItem) -> bool:
        """May `post_now` take this item past the queue, as far as the item goes? Only a
        one-part item, for an adapter that `posts_in_process` (no outage or rate limit can
        make its post wait, which is what the queue is for). The lane must be quiet too
        (`LoopGuardStore.quiet`: nothing of it queued, whoever queued it, so the lane's
        order holds), which the caller asks the store, holding the lane's ordering lock
        from then until it posted."""
        return adapter.capabilities.posts_in_process and len(item.parts) == 1

    async def post_now(self, lane: Lane, adapter: Adapter, binding: Binding,
                       item: OutboxItem) -> bool:
        """Post an item `may_post_now` allowed, at once; True once it is posted, False when
        nothing was (the caller queues it instead). The caller has claimed the delivery's
        key: a crash before the hub has its ack makes the hub deliver it again, into rooms
        that died with the process."""
        try:
            ref = await adapter.send(self._outbound(binding, item, item.parts[0], 0))
        except Exception as exc:  # nothing was posted: the queue retries, or logs and skips
            log.info("outbox: %s did not take an output at once (%s: %s); queueing it",
                     lane.channel, type(exc).__name__, exc)
            return False
        item.sent[0] = ref.message_id
        await self._remember_post(item, ref)
        await self._card_on_record(item)
        self._delivered(lane, item)
        return True

    async def _remember_post(self, item: OutboxItem, ref: PlatformRef) -> None:
        """Keep the records of a new platform message that no part write carries."""
        for key, value in (self._records(item, ref, new_post=True) or {}).items():
            await self.message_map.put(key, value, self.clock())

    async def _card_on_record(self, item: OutboxItem) -> None:
        """The post of a card is on record: a tap that settled the card while it was being
        posted found no post to redraw, so whoever keeps the cards looks again now (one
        of the two always sees the other's write: the tap saves the card before it reads
        the post, and the post is recorded before the card is read)."""
        if item.card and self.card_posted is not None:
            try:
                await self.card_posted(item.card["key"])
            except Exception:  # the post stands; a stale card still answers taps rightly
                log.exception("outbox: could not check the card %s after posting it",
                              item.card["key"])

    def _records(self, item: OutboxItem, ref: PlatformRef, *,
                 new_post: bool) -> dict[str, dict[str, Any]] | None:
        """The message-map records a posted part brings: the relay's for a new platform
        message (`sent_records`), and where a card went (each part overwrites it, so the
        last part — the one that carries the card — is what stays)."""
        records = dict(self.sent_records(item, ref)) if new_post and self.sent_records else {}
        if item.card:
            records[card_post_key(item.card["key"])] = {
                "channel": Lane.from_key(item.lane).channel, "chat_id": ref.chat_id,
                "message_id": ref.message_id, "text": item.parts[-1],
                "sender_label": item.sender_label, "protocol": item.protocol,
            }
        return records or None

    def pending_count(self) -> int:
        return len(self._pending)

    async def wait_idle(self) -> None:
        """Until every item this instance knows of has been handled (tests, shutdown)."""
        while self._pending:
            self._idle.clear()
            await self._idle.wait()

    def _forget(self, item_ids: list[int]) -> None:
        for item_id in item_ids:
            self._pending.pop(item_id, None)
        if not self._pending:
            self._idle.set()

    # ------------------------------------------------------------------ lanes
    async def _scan_forever(self) -> None:
        """Take over lanes nobody works (their holder died) now and then."""
        while True:
            await asyncio.sleep(self.orphan_scan)
            try:
                await self._adopt_lanes()
            except Exception:
                log.exception("outbox: scanning for queued lanes failed")

    async def _adopt_lanes(self) -> None:
        for lane in await self.store.lanes():
            if lane not in self._working:
                self._kick(lane)

    def _keeper(self, lane: str) -> LeaseKeeper:
        return LeaseKeeper(self.leases, f"lane:{lane}", self.holder, ttl=self.lease_ttl,
                           who=f"outbox {lane}")

    async def _work(self, lane_key: str) -> None:
        """One lane's worker: takes the lane lease, sends under it (`_send_lane`), lets go
        when the lane stayed empty, and takes it again if items came meanwhile."""
        set_log_context(lane=lane_key)
        try:
            if self.resolve(Lane.from_key(lane_key)) is None:
                # Not an account of this instance (one serves the webchat, say): leave the
                # lane to the instance that has it instead of taking it and dropping its items.
                self._forget([i for i, lane in self._pending.items() if lane == lane_key])
                return
            keeper = self._keeper(lane_key)
            while True:
                if await keeper.acquire() is None:
                    # Another instance sends this lane; it reads our items from the store.
                    self._forget([i for i, lane in self._pending.items() if lane == lane_key])
                    return
                try:
                    await keeper.run(lambda lease: self._send_lane(lane_key, lease))
                except (LeaseLost, StaleLease):  # the second: taken between two renewals
                    log.warning("outbox: lost the lease of %s; another instance sends it now",
                                lane_key)
                    return
                # Queued while we let go, by an instance whose acquire we refused?
                if not await self.store.pending(lane=lane_key, limit=1):
                    return
        finally:
            del self._working[lane_key]

    async def _send_lane(self, lane_key: str, lease: Lease) -> None:
        """Send the lane's items in order while this instance holds its lease (`lease`, the
        fence of every queue write); returns once the lane stayed empty for `linger`."""
        wakeup = self._working[lane_key]
        lane = Lane.from_key(lane_key)
        while True:
            # Cleared before the read: whatever this instance queues from here on sets
            # it again, so an item that misses this read is never missed for good.
            wakeup.clear()
            # Two, to learn whether more waits behind this one: after a lone item with
            # nothing queued here since, the worker lingers at once instead of reading
            # the empty lane first (one read per item, not two). Another instance's
            # items are found by the linger's poll, as on an idle lane.
            batch = await self.store.pending(lane=lane_key, limit=2)
            if batch:
                item = batch[0]
                self._pending[item.id] = lane_key
                handled = Handled.GIVEN_UP
                try:
                    handled = await self._handle(lane, item, lease)
                except (asyncio.CancelledError, StaleLease):
                    raise
                except Exception:
                    log.exception("outbox: giving up on an item for %s", lane_key)
                if handled is not Handled.DEQUEUED:
                    await self.store.complete(item.id, fence=lease)
                self._forget([item.id])
                if len(batch) > 1 or wakeup.is_set():
                    continue
            if not await self._lingered(lane_key, wakeup):
                return

    async def _lingered(self, lane_key: str, wakeup: asyncio.Event) -> bool:
        """Keep the empty lane a little: True as soon as it may have work again."""
        loop = asyncio.get_running_loop()
        until = loop.time() + self.linger
        while (left := until - loop.time()) > 0:
            if wakeup.is_set():
                return True
            if await _set_within(wakeup, min(left, LINGER_POLL)):
                return True
            if await self.store.pending(lane=lane_key, limit=1):
                return True  # queued by another instance
        return False

    async def _short_of_budget(self, lane: Lane, adapter: Adapter) -> bool:
        """Would a call into the lane's chat have to wait for its send budgets now?"""
        if self.pacer is None:
            return False
        budgets = adapter.pacing(lane.chat_id)
        return bool(budgets) and await self.pacer.room(budgets) > 0

    async def _behind(self, item: OutboxItem) -> list[OutboxItem]:
        """What of the lane is queued behind this item (whichever run it belongs to)."""
        pending = await self.store.pending(lane=item.lane, limit=PENDING_BATCH)
        return [other for other in pending if other.id > item.id]

    async def _superseded(self, item: OutboxItem) -> bool:
        """A later item of the same run makes this delta's preview pointless."""
        return any(other.run_id == item.run_id for other in await self._behind(item))

    async def _handle(self, lane: Lane, item: OutboxItem, lease: Lease) -> Handled:
        """Post (or finish posting) one item; what is left to do with it (`Handled`).
        Its queue writes carry `lease`: a worker that lost the lane cannot mark them."""
        resolved = self.resolve(lane)
        if resolved is None:
            log.warning("outbox: no adapter/binding for %s any more; dropping an output", lane)
            self.metrics.drop(lane.channel, "out", "unbound")
            return Handled.GIVEN_UP
        adapter, binding = resolved
        if item.kind == OutboundKind.DELTA:
            await self._preview(lane, adapter, binding, item, lease)
            return Handled.POSTED
        stream = await self._stream(item.run_id)
        streamed = len(stream.message_ids) if stream is not None else 0
        leftovers = streamed > len(item.parts)
        for index, part in enumerate(item.parts):
            if item.sent[index] is not None:
                continue
            out = self._outbound(binding, item, part, index)
            if stream is not None and index < streamed:
                ref = stream.ref(index)
                if await self._attempt(lambda o=out, r=ref: adapter.edit(r, o), lane,
                                      adapter) is _FAILED:
                    return Handled.GIVEN_UP
                records = self._records(item, ref, new_post=False)  # the preview's are kept
            else:
                ref = await self._attempt(lambda o=out: adapter.send(o), lane, adapter)
                if ref is _FAILED or ref is None:
                    return Handled.GIVEN_UP
                records = self._records(item, ref, new_post=True)
            item.sent[index] = ref.message_id
            # Marked before anything else happens, the last part too (which, with nothing
            # left to delete, ends the item in the same write): a crash from here on
            # resumes after this part instead of posting it again.
            done = index == len(item.parts) - 1 and not leftovers
            await self.store.record_part(
                item.id, index, ref.message_id, remember=records, now=self.clock(), done=done,
                fence=lease,
            )
            if index == len(item.parts) - 1:
                await self._card_on_record(item)
            if done:
                self._delivered(lane, item)
                return Handled.DEQUEUED
        if stream is not None and leftovers:
            await self._drop_leftovers(lane, adapter, item, stream)
        self._delivered(lane, item)
        return Handled.POSTED

    def _delivered(self, lane: Lane, item: OutboxItem) -> None:
        if item.run_id and item.kind != OutboundKind.DELTA:
            self._last_edit.pop(item.run_id, None)  # the run is over: no edits to pace
        # The lane named here too: an item posted at once (`post_now`) has no worker whose
        # log context would name it.
        log.debug("outbox: delivered %s output %d from %s", item.kind, item.id, item.sender_label,
                  extra={"lane": item.lane})
        self.metrics.answered(lane.channel, item.inbound_at, self.clock())

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
            if await self._attempt(lambda r=ref: adapter.delete(r), lane, adapter) is _FAILED:
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
        lease: Lease,
    ) -> None:
        """Show the text streamed so far: edit the parts that changed, post the new ones.

        A preview with a later version of its run queued behind it is moot. When that is the
        run's final and the run shows nothing yet, the final is shown here and now, ahead of
        its turn: the run's message lands where its first output is in the lane, in the
        order the bot began its replies, for the one call the final costs anyway. (Skipped,
        the run would first show at its final, after the previews of runs that began later;
        a preview moot by a newer preview is skipped as ever — showing that one here would
        cost a call more.)"""
        if not adapter.capabilities.can_edit or not item.run_id or not item.parts:
            return  # adapters that cannot edit get the final only
        behind = await self._behind(item)
        later = [other for other in behind if other.run_id == item.run_id]
        if later:
            if later[-1].kind != OutboundKind.DELTA and await self._stream(item.run_id) is None:
                await self._handle_ahead(lane, later, lease)
            return  # superseded: a later version of this run is queued
        if behind and await self._short_of_budget(lane, adapter):
            return  # finals and notices first: this run's next version shows the newest text
        loop = asyncio.get_running_loop()
        stream = await self._stream(item.run_id)
        if stream is not None:
            wait = self._last_edit.get(item.run_id, 0.0) + adapter.capabilities.min_edit_interval
            if (delay := wait - loop.time()) > 0:
                await asyncio.sleep(delay)
                if await self._superseded(item):
                    return
        for index, part in enumerate(item.parts):
            digest = text_digest(part)
            if stream is not None and index < len(stream.message_ids):
                if stream.shown[index] == digest:
                    continue
                out = self._outbound(binding, item, part, index)
                ref = stream.ref(index)
                if await self._attempt(lambda o=out, r=ref: adapter.edit(r, o), lane,
                                      adapter) is _FAILED:
                    return
            else:
                out = self._outbound(binding, item, part, index)
                ref = await self._attempt(lambda o=out: adapter.send(o), lane, adapter)
                if ref is _FAILED or ref is None:
                    return
                if stream is None:
                    stream = StreamedMessages(ref.chat_id, ref.thread_id, [], [])
                stream.message_ids.append(ref.message_id)
                stream.shown.append("")
                await self._remember_post(item, ref)
            stream.shown[index] = digest
            await self._save_stream(item.run_id, stream)
        self._last_edit[item.run_id] = loop.time()
        if len(self._last_edit) > LAST_EDITS_KEPT:  # runs that never ended (a bot that died)
            del self._last_edit[next(iter(self._last_edit))]

    async def _handle_ahead(self, lane: Lane, run: list[OutboxItem], lease: Lease) -> None:
        """Handle a run's final before its turn (see `_preview`), and take it and the run's
        previews queued before it off the queue (moot now) as the worker would: the worker
        reads the queue afresh for each item, so it never meets them."""
        *moot, final = run
        self._pending[final.id] = lane.key
        handled = await self._handle(lane, final, lease)
        for item in moot if handled is Handled.DEQUEUED else run:
            await self.store.complete(item.id, fence=lease)
        self._forget([item.id for item in run])

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
            from_human=item.from_human,
            card=Card.from_record(item.card) if item.card and index == len(item.parts) - 1
            else None,
        )

    async def _attempt(self, call: Callable[[], Awaitable[T]], lane: Lane,
                       adapter: Adapter) -> T | _Failed:
        """Run one platform call until it succeeds or fails for good (`_FAILED`).

        Each try first waits its turn in the account's send budgets for the chat (the
        platform's published limits, `Adapter.pacing`). Transient failures wait (the
        platform's retry-after when it gave one) and retry the same call, which is what
        keeps a lane in order through a 429 or an outage.
        """
        backoff = Backoff(initial=self.retry_initial, maximum=self.retry_maximum)
        budgets = adapter.pacing(lane.chat_id) if self.pacer is not None else ()
        while True:
            if budgets:
                assert self.pacer is not None
                await self.pacer.turn(lane.channel, budgets)
            try:
                return await call()
            except PermanentSendError as exc:
                log.error("outbox: %s refused an output for good: %s", lane.channel, exc)
                self.metrics.drop(lane.channel, "out", "platform_refused")
                return _FAILED
            except SendError as exc:
                delay = backoff.next_delay(exc.retry_after)
                self.metrics.retried(lane.channel)
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
                    self.metrics.drop(lane.channel, "out", "failed")
                    return _FAILED
                delay = backoff.next_delay()
                self.metrics.retried(lane.channel)
                log.warning(
                    "outbox: %s failed (%s: %s); retrying in %.1fs",
                    lane.channel, type(exc).__name__, exc, delay,
                )
                await asyncio.sleep(delay)
