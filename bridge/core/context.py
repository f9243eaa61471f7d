"""What every relay step needs: the store, tracker, link, outbox, adapters and bindings.

One object, built once by the `Relay`, so pipeline steps stay small functions of
(context, message) instead of each holding its own copies of shared state.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bridge.background import Background
from bridge.config.sections import CommandNames
from bridge.core.adapter import Adapter
from bridge.core.binding import Binding
from bridge.core.events import RelayEvents
from bridge.core.link import LinkClient
from bridge.core.model import OutboundKind
from bridge.core.outbox import Lane, Outbox
from bridge.core.pauses import BindingPauses
from bridge.core.relay_state import GroupBots, RelayState
from bridge.core.render import render_parts_soon
from bridge.core.spool import InboundSpool
from bridge.metrics import BridgeMetrics
from bridge.store.base import Store
from bridge.store.loop_guard import Released
from bridge.store.records import Conversation
from bridge.store.relay import OutboxItem
from bridge.tracking import Tracker

log = logging.getLogger(__name__)

BRIDGE_NAME = "bcn-bridge"
TYPING_EVERY = 4.0


@dataclass(slots=True)
class RelayContext:
    store: Store
    tracker: Tracker
    outbox: Outbox
    link: LinkClient
    spool: InboundSpool
    state: RelayState
    """Sessions, group bots, waiting questions: records in the store, not in this object."""
    adapters: dict[str, Adapter]
    bindings: list[Binding]
    clock: Callable[[], datetime]
    pauses: BindingPauses
    """Bindings an operator paused (their human messages reach the bots to observe only)."""
    events: RelayEvents
    """What watchers (the dashboard) are told as it happens; publishing never waits."""
    commands: CommandNames = field(default_factory=CommandNames)
    bridge_name: str = BRIDGE_NAME
    max_reply_chars: int = 100_000
    """Longest bot output shown; longer ones are cut (see `OutboundPipeline.truncated`)."""
    background: Background = field(default_factory=lambda: Background("relay-io"))
    metrics: BridgeMetrics = field(default_factory=BridgeMetrics)
    _warned_unbound: set[str] = field(default_factory=set)
    _by_chat: dict[tuple[str, str], list[Binding]] = field(default_factory=dict)
    _ordering: weakref.WeakValueDictionary[str, asyncio.Lock] = field(
        default_factory=weakref.WeakValueDictionary
    )
    """Per-lane queueing order (see `_in_order`); a lock nobody holds is forgotten."""
    _typing_at: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._by_chat: dict[tuple[str, str], list[Binding]] = {}
        for binding in self.bindings:
            self._by_chat.setdefault((binding.channel, binding.chat), []).append(binding)

    def binding_by_key(self, key: str) -> Binding | None:
        """The binding whose `binding_key` is `key` (see `bridge.core.spool`)."""
        channel, chat_id, thread = key.split("|", 2)
        for binding in self._by_chat.get((channel, chat_id), ()):
            if (binding.thread or "") == thread:
                return binding
        return None

    def binding_for(self, channel: str, chat_id: str, thread_id: str | None) -> Binding | None:
        """The most specific binding: a thread-pinned one beats a whole-chat one (found by
        chat in a dict: a bridge with thousands of bindings pays nothing per message)."""
        best: Binding | None = None
        for binding in self._by_chat.get((channel, chat_id), ()):
            if binding.matches(channel, chat_id, thread_id) and (
                best is None or binding.thread is not None
            ):
                best = binding
        return best

    def warn_unbound_once(self, channel: str, chat_id: str) -> None:
        key = f"{channel}|{chat_id}"
        if key not in self._warned_unbound:
            self._warned_unbound.add(key)
            log.info("ignoring messages from unbound chat %s (chat id %r)", channel, chat_id)

    def resolve(self, lane: Lane) -> tuple[Adapter, Binding] | None:
        adapter = self.adapters.get(lane.channel)
        binding = self.binding_for(lane.channel, lane.chat_id, lane.thread_id)
        if adapter is None or binding is None:
            return None
        return adapter, binding

    async def bots(self, binding: Binding) -> GroupBots:
        """The bots of the binding's group, as the hub last said."""
        return await self.state.group_bots(binding.group)

    async def post(
        self,
        lane: Lane,
        binding: Binding,
        markdown: str,
        *,
        sender_label: str,
        kind: OutboundKind = OutboundKind.FINAL,
        run_id: str | None = None,
        conversation: str = "",
        protocol: dict[str, Any] | None = None,
        reply_to: str | None = None,
        once: str | None = None,
        from_human: bool = False,
        inbound_at: datetime | None = None,
    ) -> bool:
        """Render for the lane's adapter and queue durably (returns once stored).

        `once`: a `seen` key recorded in the same transaction (see `Outbox.put`). True when
        the output was queued by this call.
        """
        async with self._in_order(lane):
            item = await self._item(lane, binding, markdown, sender_label=sender_label,
                                    kind=kind, run_id=run_id, conversation=conversation,
                                    protocol=protocol, reply_to=reply_to,
                                    from_human=from_human, inbound_at=inbound_at)
            return item is not None and await self.outbox.put(item, once=once)

    async def post_bot_output(
        self,
        lane: Lane,
        binding: Binding,
        markdown: str,
        *,
        sender_label: str,
        run_id: str | None,
        conversation: str,
        protocol: dict[str, Any] | None,
        once: str | None,
        inbound_at: datetime | None = None,
        streamed: bool = False,
    ) -> bool:
        """A bot's final, through the lane's loop guard, in one store write: queued when
        allowed, held while the chat is paused (the chat is told once, when it pauses).
        False only for a replayed delivery (nothing done). `inbound_at`: when the human
        message it answers arrived (the relay latency metric; such a reply is not counted
        by the guard while it counts nothing). `streamed`: the run showed a preview, which
        the queue's worker replaces.

        A reply the guard leaves alone, on a platform that posts in process, is posted at
        once instead (`Outbox.post_now`): its delivery's key is claimed without waiting for
        the disk, since what a crash loses with it is the room it was posted in."""
        async with self._in_order(lane):
            item = await self._item(lane, binding, markdown, sender_label=sender_label,
                                    kind=OutboundKind.FINAL, run_id=run_id,
                                    conversation=conversation, protocol=protocol,
                                    inbound_at=inbound_at)
            if item is None:
                return False
            adapter = self.adapters[lane.channel]  # `_item` found it
            if (not streamed and inbound_at is not None
                    and self.outbox.may_post_now(adapter, item)
                    and await self.store.loop_guard.quiet(lane.key)):
                if once is not None and not await self.store.seen.note(once, self.clock()):
                    return False  # a replay, handled meanwhile
                if await self.outbox.post_now(lane, adapter, binding, item):
                    return True
                once = None  # claimed above; queued below instead
            guard = binding.loop_guard
            verdict, _ = await self.store.loop_guard.post(
                lane.key, item, limit=guard.max_messages, window=guard.window_seconds,
                keep=guard.max_messages, once=once, now=self.clock(),
                answers_human=inbound_at is not None,
            )
        if verdict == "allow":
            self.outbox.adopt([item])
        elif verdict != "seen":
            self.metrics.hold(lane.channel, "loop_guard")
            if verdict == "tripped":
                await self._tell_paused(lane, binding)
        return verdict != "seen"

    def _in_order(self, lane: Lane) -> asyncio.Lock:
        """One lane's outputs are rendered and queued one at a time, in the order they came:
        a long one rendered off the loop must not let a later one overtake it (a delta of a
        run landing after its final would edit the finished reply back)."""
        lock = self._ordering.get(lane.key)
        if lock is None:
            lock = self._ordering[lane.key] = asyncio.Lock()
        return lock

    async def _item(
        self,
        lane: Lane,
        binding: Binding,
        markdown: str,
        *,
        sender_label: str,
        kind: OutboundKind,
        run_id: str | None,
        conversation: str,
        protocol: dict[str, Any] | None,
        reply_to: str | None = None,
        from_human: bool = False,
        inbound_at: datetime | None = None,
    ) -> OutboxItem | None:
        """The outbox item an output becomes: rendered and split for the lane's adapter."""
        adapter = self.adapters.get(lane.channel)
        if adapter is None:
            log.warning("no adapter for %s; cannot post", lane.channel)
            return None
        parts = await render_parts_soon(
            markdown, binding, adapter.capabilities, adapter.directory(lane.chat_id)
        )
        return OutboxItem(
            lane=lane.key,
            kind=kind.value,
            sender_label=sender_label,
            parts=parts,
            conversation=conversation,
            run_id=run_id,
            reply_to=reply_to,
            protocol=protocol,
            created_at=self.clock(),
            from_human=from_human,
            inbound_at=inbound_at,
        )

    async def track(self, parsed: Any, lane: Lane) -> Conversation:
        """Track a protocol message seen in this lane and refresh the lane's request panel;
        returns the conversation (its `request_id` is the store key: scoped to this chat
        when another chat used the id first)."""
        conversation = await self.tracker.track(parsed, self.clock(), chat=lane.key)
        if conversation.status == "clarifying" and not await self.state.may_clarify(lane.key):
            await self.state.set_may_clarify(lane.key, True)
        await self.refresh_panel(lane)
        return conversation

    async def refresh_panel(self, lane: Lane) -> None:
        adapter = self.adapters.get(lane.channel)
        if adapter is None or not adapter.capabilities.request_panel:
            return
        open_ = await self.tracker.list(status=("open", "clarifying"), chat=lane.key)
        items = [
            {key: value for key, value in conv.to_dict().items() if key != "history"}
            for conv in open_
        ]
        try:
            await adapter.update_requests(lane.chat_id, items)
        except Exception:
            log.exception("could not update the request panel of %s", lane.key)

    async def bot_turn(self, lane: Lane, binding: Binding) -> bool:
        """Count one bot-authored message in the lane; False when the loop guard pauses it
        (the chat is told once, when the pause starts)."""
        guard = binding.loop_guard
        verdict = await self.store.loop_guard.bot_spoke(
            lane.key, limit=guard.max_messages, window=guard.window_seconds, now=self.clock()
        )
        if verdict == "tripped":
            await self._tell_paused(lane, binding)
        return verdict == "allow"

    async def _tell_paused(self, lane: Lane, binding: Binding) -> None:
        guard = binding.loop_guard
        await self.notice(
            lane, binding,
            f"⏸️ Bot messages paused here: more than {guard.max_messages} in "
            f"{guard.window_seconds:g}s without a human. What they say is held; say "
            "something to see it and let them go on.",
        )

    async def human_spoke(
        self, lane: Lane, binding: Binding, *, by_operator: str | None = None
    ) -> Released | None:
        """A human wrote (or an operator released the lane from the dashboard): the lane's
        loop guard resets, and what it held is shown. None when the lane was not paused."""
        released = await self.store.loop_guard.human_spoke(lane.key)
        if released is None:
            return None
        self.outbox.adopt(released.items)
        held = len(released.items) + released.not_kept
        who = f" (released by {by_operator})" if by_operator else ""
        if held:
            lost = (f" ({released.not_kept} more were held but not kept: at most "
                    f"{binding.loop_guard.max_messages} are)") if released.not_kept else ""
            text = (f"▶️ Bots resume{who}. {len(released.items)} message(s) they sent while "
                    f"paused are shown above{lost}.")
        else:
            text = f"▶️ Bots resume{who}."
        await self.notice(lane, binding, text)
        return released

    def show_typing(self, lane: Lane) -> None:
        """Tell the chat a bot is working (platforms with a typing indicator), at most
        once per `TYPING_EVERY` seconds per chat: the indicator lasts about five seconds."""
        adapter = self.adapters.get(lane.channel)
        if adapter is None or not adapter.capabilities.typing:
            return
        now = time.monotonic()
        if now - self._typing_at.get(lane.key, -TYPING_EVERY) < TYPING_EVERY:
            return
        self._typing_at[lane.key] = now

        async def typing() -> None:
            try:
                await adapter.typing(lane.chat_id, lane.thread_id)
            except Exception as exc:  # a missing indicator is not worth more than a line
                log.debug("typing indicator in %s failed: %s", lane.key, exc)

        self.background.spawn(typing(), name=f"typing:{lane.key}")

    async def notice(
        self, lane: Lane, binding: Binding, markdown: str, *, reply_to: str | None = None
    ) -> None:
        """A message from the bridge itself (command answers, timeouts, guards).

        A command's answer is a reply to the command (`reply_to` = its platform message id):
        adapters whose commands are native interactions answer the interaction with it.
        """
        await self.post(lane, binding, markdown, sender_label=self.bridge_name,
                        kind=OutboundKind.SYSTEM, reply_to=reply_to)
