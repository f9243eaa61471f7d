"""The relay: one object that wires pipelines, outbox, link, tracker and adapters together.

Adapters hand every platform message to `Relay.accept`; the link hands every hub delivery
to the outbound pipeline; a sweeper closes protocol conversations that timed out and tells
their chat. Construction does no I/O; `start()` resumes the outbox, connects the link and
starts the adapters; `stop()` undoes it in reverse.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from bridge.background import Background
from bridge.bcn import BcnError, ConnectionClosed
from bridge.config.sections import CommandNames
from bridge.core.account_state import AccountState
from bridge.core.adapter import Adapter, AdapterStartError
from bridge.core.binding import Binding, BindingIndex
from bridge.core.context import BRIDGE_NAME, RelayContext
from bridge.core.decisions import Decisions
from bridge.core.events import RelayEvents
from bridge.core.inbound import InboundPipeline, sent_key
from bridge.core.instance import instance_name
from bridge.core.lease_keeper import LeaseKeeper
from bridge.core.link import LinkClient, LinkSettings
from bridge.core.model import Inbound, PlatformRef
from bridge.core.operator import Operator
from bridge.core.outbound import OutboundPipeline
from bridge.core.outbox import Lane, Outbox
from bridge.core.pacing import Pacer
from bridge.core.pauses import BindingPauses
from bridge.core.posting import LoopGuard, Posting, Typing
from bridge.core.relay_state import RelayState
from bridge.core.spool import DEFAULT_SPOOL_LIMIT, InboundSpool
from bridge.logs import log_context, redact
from bridge.metrics import BridgeMetrics
from bridge.store.base import Store
from bridge.store.leases import Lease
from bridge.store.records import Conversation
from bridge.store.relay import OutboxItem
from bridge.tracking import Tracker

log = logging.getLogger(__name__)

HOUSEKEEPING_EVERY = 240
SWEEP_LEASE_MIN = 30.0
"""Seconds: the sweep lease's TTL is at least this, however short the interval."""
"""Sweeps between two housekeeping passes (an hour at the default 15 s sweep)."""


def utc_now() -> datetime:
    return datetime.now(UTC)


async def start_adapter(adapter: Adapter) -> None:
    """Start one account; whatever stops it comes back as an `AdapterStartError`.

    Each adapter turns the failures it knows (a refused token, a switch off) into a
    sentence of its own; anything else it raises — a new error class, a library's surprise —
    would otherwise end `bcn-bridge run` in a traceback instead of the one line
    docs/operations.md promises. The traceback stays available at DEBUG level.
    """
    try:
        await adapter.start()
    except AdapterStartError:
        raise
    except Exception as exc:
        log.debug("%s could not start", adapter.channel, exc_info=True)
        detail = redact(f"{type(exc).__name__}: {exc}")
        raise AdapterStartError(f"{adapter.channel}: {detail}") from None


class Relay:
    def __init__(
        self,
        *,
        store: Store,
        bindings: list[Binding],
        link: LinkSettings,
        clock: Callable[[], datetime] = utc_now,
        commands: CommandNames | None = None,
        timeouts: Mapping[str, timedelta] | None = None,
        sweep_interval: float = 15.0,
        bridge_name: str = BRIDGE_NAME,
        max_reply_chars: int = 100_000,
        outbox_retry_initial: float = 0.5,
        retention: timedelta = timedelta(days=7),
        spool_limit: int = DEFAULT_SPOOL_LIMIT,
        instance: str | None = None,
        metrics: BridgeMetrics | None = None,
    ) -> None:
        self.metrics = metrics = metrics or BridgeMetrics()
        self.sweep_interval = sweep_interval
        self._sweeps = 0
        self.retention = retention
        self._background = Background("relay")
        self._refreshing: dict[str, asyncio.Future[None]] = {}
        self._refresh_again: set[str] = set()
        """Groups being listed, and those changed again meanwhile (see `_refresh_group`)."""
        self._groups_told: set[str] = set()
        """Groups whose bots the adapters were told from a listing of the hub (not the store)."""
        self.link = LinkClient(
            link, bindings, on_deliver=self._deliver, on_event=self._on_link_event,
            on_connected=self._on_link_up,
        )
        # The outbox asks the context which adapter and binding serve a lane, and the
        # context queues into the outbox: the lambda closes that loop without a None.
        self.instance = instance or instance_name(link.link_name)
        self.outbox = Outbox(
            store.outbox, store.message_map, lambda lane: self.ctx.resolve(lane), clock=clock,
            leases=store.leases, holder=self.instance,
            sent_records=self._sent_records, retry_initial=outbox_retry_initial, metrics=metrics,
            card_posted=lambda key: self.decisions.posted(key),
            pacer=Pacer(store.pacing, metrics),
        )
        # The spool calls back into the pipeline and the context, both built just below.
        self.spool = InboundSpool(
            store, self.link, clock=clock,
            find_binding=lambda key: self.ctx.bindings.by_key(key),
            on_accepted=lambda lane, payload: self.inbound.accepted(lane, payload),
            notify=lambda lane, binding, text: self.posting.notice(lane, binding, text),
            bots_online=self._group_online,
            limit=spool_limit,
            holder=self.instance,
            metrics=metrics,
        )
        self.events = RelayEvents(clock)
        self.ctx = RelayContext(
            store=store,
            tracker=Tracker(store, timeouts=timeouts, on_change=self._conversation_changed),
            outbox=self.outbox,
            link=self.link,
            spool=self.spool,
            state=RelayState(store, clock),
            adapters={},
            bindings=BindingIndex(bindings),
            clock=clock,
            pauses=BindingPauses(store.pauses),
            events=self.events,
            commands=commands or CommandNames(),
            bridge_name=bridge_name,
            max_reply_chars=max_reply_chars,
            metrics=metrics,
        )
        self.posting = Posting(self.ctx)
        self.guard = LoopGuard(self.ctx, self.posting)
        typing = Typing(self.ctx)  # one per process: both pipelines show it, one rate limit
        self.inbound = InboundPipeline(self.ctx, self.posting, self.guard, typing,
                                       holder=self.instance)
        self.outbound = OutboundPipeline(self.ctx, self.posting, typing)
        self.decisions = self.ctx.decisions = Decisions(self.ctx, self.accept)
        self.operator = Operator(self.ctx, self.posting, self.guard)

    @property
    def tracker(self) -> Tracker:
        return self.ctx.tracker

    def add_adapter(self, adapter: Adapter) -> None:
        self.ctx.adapters[adapter.channel] = adapter
        adapter.taps = self.decisions.tap
        adapter.use_state(
            AccountState(self.ctx.store, adapter.channel, self.ctx.clock, holder=self.instance)
        )

    # ------------------------------------------------------------------ lifecycle
    async def start(self, *, wait_for_link: bool = False) -> None:
        for conv in await self.ctx.tracker.list(status="clarifying"):
            if conv.chat and not await self.ctx.state.may_clarify(conv.chat):
                await self.ctx.state.set_may_clarify(conv.chat, True)
        await self.outbox.start()
        await self.spool.start()
        await self.link.start(wait=wait_for_link)
        await self._tell_adapters_known_bots()
        for adapter in self.ctx.adapters.values():
            await start_adapter(adapter)
            adapter.started = True
            log.info("adapter %s started", adapter.channel)
        self._background.spawn(self._sweep_forever(), name="sweeper")

    async def stop(self) -> None:
        await self._background.cancel_all()
        await self.ctx.background.cancel_all()
        for adapter in reversed(list(self.ctx.adapters.values())):
            adapter.started = False
            try:
                await adapter.stop()
            except Exception:
                log.exception("adapter %s did not stop cleanly", adapter.channel)
        await self.spool.stop()
        await self.link.stop()
        await self.outbox.stop()

    # ------------------------------------------------------------------ entry points
    async def accept(self, msg: Inbound) -> None:
        """The sink every adapter calls; a failure here is logged, never raised at them."""
        try:
            with log_context(channel=msg.channel, chat=msg.chat_id, message_id=msg.message_id):
                await self.inbound.handle(msg)
        except (BcnError, ConnectionClosed, TimeoutError) as exc:
            log.error("could not relay %s message %s: %s", msg.channel, msg.message_id, exc)
        except Exception:
            log.exception("relaying %s message %s failed", msg.channel, msg.message_id)

    async def _deliver(self, params: dict[str, Any]) -> None:
        with log_context(binding=params.get("binding_id"), run_id=params.get("run_id"),
                         message_id=params.get("source_msg_id")):
            await self.outbound.deliver(params)

    def _sent_records(self, item: OutboxItem, ref: PlatformRef) -> dict[str, dict[str, Any]]:
        """What the bridge remembers of a message it posted: the own-echo filter and a
        reply to a bot's CLARIFY look it up by platform message id (nothing, where the
        platform has neither)."""
        lane = Lane.from_key(item.lane)
        self.metrics.posted(lane.channel)
        adapter = self.ctx.adapters.get(lane.channel)
        if adapter is not None and not adapter.capabilities.looks_posts_up:
            return {}
        protocol = item.protocol or {}
        return {sent_key(lane.channel, ref.chat_id, ref.message_id): {
            "run_id": item.run_id,
            "conversation": item.conversation,
            "sender": item.sender_label,
            "type": protocol.get("type"),
            "request_id": protocol.get("request_id"),
        }}

    def _conversation_changed(self, conv: Conversation) -> None:
        self.events.publish("conversation", request_id=conv.request_id, status=conv.status,
                            chat=conv.chat)
        if conv.status != "clarifying" and any(e.type == "CLARIFY" for e in conv.history):
            # A question no longer waiting (answered by typing, closed, timed out): its
            # cards say so. Only conversations that asked one cost the store read.
            self.ctx.background.spawn(self.decisions.moved_on(conv), name="card-redraw")

    # ------------------------------------------------------------------ participants
    async def _on_link_event(self, name: str, payload: dict[str, Any]) -> None:
        if name == "channel.participants.changed" and isinstance(payload.get("group_id"), str):
            await self._refresh_group(payload["group_id"])

    async def _group_online(self, binding: Binding) -> bool:
        """Are all the group's bots online? (After a hub restart they come back one by one;
        a message sent before its addressee is back reaches nobody.)"""
        return (await self.ctx.bots(binding)).all_online

    async def _on_link_up(self) -> None:
        await self._refresh_participants()
        self.spool.link_up()

    async def _refresh_participants(self) -> None:
        for group in sorted({binding.group for binding in self.ctx.bindings}):
            await self._refresh_group(group)

    async def _refresh_group(self, group: str) -> None:
        """List the group's bots; a burst of changes costs one listing in flight plus one.

        A change while a listing is in flight only asks for one more after it, and waits for
        that one: a registration flood sends many notices, and one full listing each made the
        work grow with the square of the group.
        """
        running = self._refreshing.get(group)
        if running is not None:
            self._refresh_again.add(group)
            await asyncio.shield(running)
            return
        done = self._refreshing[group] = asyncio.get_running_loop().create_future()
        try:
            while True:
                self._refresh_again.discard(group)
                await self._list_group(group)
                if group not in self._refresh_again:
                    return
        finally:
            del self._refreshing[group]
            done.set_result(None)

    async def _list_group(self, group: str) -> None:
        try:
            payload = await self.link.request("channel.participants", {"group_id": group})
        except (BcnError, ConnectionClosed, TimeoutError) as exc:
            log.warning("could not list the bots of group %s: %s", group, exc)
            return
        found = [
            p for p in payload.get("participants") or [] if isinstance(p, dict) and p.get("name")
        ]
        names = [str(p["name"]) for p in found]
        online = [str(p["name"]) for p in found if p.get("online")]
        await self.ctx.state.set_group_bots(group, names, online)
        self._tell_adapters(group, names)
        self.events.publish("participants", group=group, names=names, online=online)
        self.spool.bots_changed()

    async def _tell_adapters_known_bots(self) -> None:
        """Before the accounts start, the bots each group had when the hub last listed them:
        a bridge started while the hub is away still knows them (the link lists them anew
        once it is up)."""
        for group in sorted({binding.group for binding in self.ctx.bindings}):
            known = await self.ctx.state.group_bots(group)
            if known.names and group not in self._groups_told:  # a fresh listing wins
                self._tell_adapters(group, list(known.names))

    def _tell_adapters(self, group: str, names: list[str]) -> None:
        """Each account with a chat bound to `group` learns its bots (`use_group_bots`)."""
        self._groups_told.add(group)
        channels = {binding.channel for binding in self.ctx.bindings if binding.group == group}
        for channel in sorted(channels):
            adapter = self.ctx.adapters.get(channel)
            if adapter is None:
                continue
            try:
                adapter.use_group_bots(group, tuple(names))
            except Exception:
                log.exception("adapter %s could not take the bots of group %s", channel, group)

    # ------------------------------------------------------------------ timeouts
    async def _sweep_forever(self) -> None:
        """Timeouts and housekeeping, done by whichever instance holds the sweep lease; the
        others ask for it every interval. Its TTL is `max(3 × interval, 30 s)`: a sweep of
        a large backlog may take a while, and a dead sweeper's timeouts wait that long."""
        keeper = LeaseKeeper(
            self.ctx.store.leases, "relay:sweep", self.instance,
            ttl=max(3 * self.sweep_interval, SWEEP_LEASE_MIN),
            standby_retry=self.sweep_interval, who="sweep",
        )
        await keeper.serve(self._sweep_while_held)

    async def _sweep_while_held(self, _lease: Lease) -> None:
        while True:
            await asyncio.sleep(self.sweep_interval)
            try:
                self._sweeps += 1
                await self.sweep_once()
                if self._sweeps % HOUSEKEEPING_EVERY == 0:
                    await self.forget_old()
            except Exception:
                log.exception("timeout sweep failed")

    async def forget_old(self, now: datetime | None = None) -> int:
        """Drop state older than `retention`: seen ids, the message map, finished requests.

        Without it these grow forever; a week is far longer than any platform redelivers
        a message or anyone replies to a bot's question.
        """
        cut = (now or self.ctx.clock()) - self.retention
        store = self.ctx.store
        removed = await store.seen.prune(cut) + await store.message_map.prune(cut)
        removed += await store.streams.prune(cut)
        removed += await self.ctx.tracker.cleanup(self.retention, now or self.ctx.clock())
        if removed:
            log.info("housekeeping: forgot %d record(s) older than %s", removed, self.retention)
        return removed

    async def sweep_once(self, now: datetime | None = None) -> list[Conversation]:
        """Close timed-out conversations and post a notice in each one's chat.

        Batch by batch (`Tracker.sweep_batches` yields to the loop between them), so a
        thousand expiries never stall the chats for more than one batch's work.
        """
        closed: list[Conversation] = []
        async for batch in self.ctx.tracker.sweep_batches(now or self.ctx.clock()):
            closed.extend(batch)
            await self._notify_timeouts(batch)
        return closed

    async def _notify_timeouts(self, closed: list[Conversation]) -> None:
        """A notice per timed-out request; each lane's request panel refreshed once."""
        panels: dict[str, Lane] = {}
        for conv in closed:
            await self.decisions.ended(conv.request_id, conv.status)
            if conv.status != "timeout" or not conv.chat:
                continue
            lane = Lane.from_key(conv.chat)
            resolved = self.ctx.resolve(lane)
            if resolved is None:
                continue
            _, binding = resolved
            waited = self.ctx.tracker.timeouts.get(conv.last_type)
            minutes = f" after {int(waited.total_seconds() // 60)} min" if waited else ""
            await self.posting.notice(
                lane, binding,
                f"⏱️ Request `{conv.request_id}` ({conv.from_} → {conv.to}) timed out"
                f"{minutes} without an answer and is closed.",
            )
            panels[lane.key] = lane
        for lane in panels.values():
            await self.ctx.refresh_panel(lane)
