"""The tail both pipelines share: render for the lane's adapter, the loop guard, the outbox.

- `Posting` turns one output into an outbox item (rendered and split for the lane's adapter)
  and queues it, one lane at a time; a bot's final goes through the lane's loop guard in the
  same store write (`Posting.bot_output`). Bridge notices (`Posting.notice`) are outputs too.
- `LoopGuard` is the inbound side of the guard: a human message resets it and shows what it
  held, a platform bot's message counts.
- `Typing` shows a chat that a bot is working, at most every `TYPING_EVERY` seconds.

They hold no state of their own beyond what keeps one process orderly (the lane's lock, the
time of the last typing indicator); the guard's counts, what it holds and every queued item
are in the store.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from datetime import datetime
from typing import Any

from bridge.core.binding import Binding
from bridge.core.context import RelayContext
from bridge.core.model import OutboundKind
from bridge.core.outbox import Lane
from bridge.core.render import render_parts_soon
from bridge.store.loop_guard import Released
from bridge.store.relay import OutboxItem

log = logging.getLogger(__name__)

TYPING_EVERY = 4.0


class Posting:
    """Render → (loop guard →) outbox, for whatever the relay shows in a chat."""

    def __init__(self, ctx: RelayContext) -> None:
        self.ctx = ctx
        self._ordering: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        """Per-lane queueing order (see `_in_order`); a lock nobody holds is forgotten."""

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
            return item is not None and await self.ctx.outbox.put(item, once=once)

    async def bot_output(
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

        Rendered first: what the guard holds is kept rendered, and its verdict and the
        queueing are one store write (`LoopGuardStore.post`).

        A reply the guard leaves alone, on a platform that posts in process, is posted at
        once instead (`Outbox.post_now`): its delivery's key is claimed without waiting for
        the disk, since what a crash loses with it is the room it was posted in."""
        ctx = self.ctx
        async with self._in_order(lane):
            item = await self._item(lane, binding, markdown, sender_label=sender_label,
                                    kind=OutboundKind.FINAL, run_id=run_id,
                                    conversation=conversation, protocol=protocol,
                                    inbound_at=inbound_at)
            if item is None:
                return False
            adapter = ctx.adapters[lane.channel]  # `_item` found it
            if (not streamed and inbound_at is not None
                    and ctx.outbox.may_post_now(adapter, item)
                    and await ctx.store.loop_guard.quiet(lane.key)):
                if once is not None and not await ctx.store.seen.note(once, ctx.clock()):
                    return False  # a replay, handled meanwhile
                if await ctx.outbox.post_now(lane, adapter, binding, item):
                    return True
                once = None  # claimed above; queued below instead
            guard = binding.loop_guard
            verdict, _ = await ctx.store.loop_guard.post(
                lane.key, item, limit=guard.max_messages, window=guard.window_seconds,
                keep=guard.max_messages, once=once, now=ctx.clock(),
                answers_human=inbound_at is not None,
            )
        if verdict == "allow":
            ctx.outbox.adopt([item])
        elif verdict != "seen":
            ctx.metrics.hold(lane.channel, "loop_guard")
            if verdict == "tripped":
                await self.tell_paused(lane, binding)
        return verdict != "seen"

    async def notice(
        self, lane: Lane, binding: Binding, markdown: str, *, reply_to: str | None = None
    ) -> None:
        """A message from the bridge itself (command answers, timeouts, guards).

        A command's answer is a reply to the command (`reply_to` = its platform message id):
        adapters whose commands are native interactions answer the interaction with it.
        """
        await self.post(lane, binding, markdown, sender_label=self.ctx.bridge_name,
                        kind=OutboundKind.SYSTEM, reply_to=reply_to)

    async def tell_paused(self, lane: Lane, binding: Binding) -> None:
        """The notice of a lane whose loop guard just paused it."""
        guard = binding.loop_guard
        await self.notice(
            lane, binding,
            f"⏸️ Bot messages paused here: more than {guard.max_messages} in "
            f"{guard.window_seconds:g}s without a human. What they say is held; say "
            "something to see it and let them go on.",
        )

    def _in_order(self, lane: Lane) -> asyncio.Lock:
        """One lane's outputs are rendered and queued one at a time, in the order they came:
        a long one rendered off the loop must not let a later one overtake it (a delta of a
        run landing after its final would edit the finished reply back).

        A lock in this process is enough for that, with several instances too: the hub gives
        all of a binding's outputs to one link while that link lives (docs/scale-out.md), so
        one run's deltas and final are rendered and queued by one process; and across a
        takeover the store marks a run ended when its final takes the run's text, so a delta
        that still arrives late (on the old owner or the new one) shows nothing."""
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
        adapter = self.ctx.adapters.get(lane.channel)
        if adapter is None:
            log.warning("no adapter for %s; cannot post", lane.channel)
            return None
        parts = await render_parts_soon(
            markdown, binding, adapter.capabilities, adapter.directory(lane.chat_id)
        )
        card = None
        if (adapter.capabilities.cards and protocol and protocol.get("type") == "CLARIFY"
                and kind == OutboundKind.FINAL and self.ctx.decisions is not None):
            card = await self.ctx.decisions.issue(lane, binding, protocol, run_id)
        return OutboxItem(
            lane=lane.key,
            kind=kind.value,
            sender_label=sender_label,
            parts=parts,
            conversation=conversation,
            run_id=run_id,
            reply_to=reply_to,
            protocol=protocol,
            created_at=self.ctx.clock(),
            from_human=from_human,
            inbound_at=inbound_at,
            card=card.to_record() if card is not None else None,
        )


class LoopGuard:
    """The loop guard as messages in a chat move it (its counts and holdings are in the
    store, so every instance sees the same pause and a restart keeps it)."""

    def __init__(self, ctx: RelayContext, posting: Posting) -> None:
        self.ctx = ctx
        self.posting = posting

    async def bot_turn(self, lane: Lane, binding: Binding) -> bool:
        """Count one bot-authored message in the lane; False when the loop guard pauses it
        (the chat is told once, when the pause starts)."""
        ctx = self.ctx
        guard = binding.loop_guard
        verdict = await ctx.store.loop_guard.bot_spoke(
            lane.key, limit=guard.max_messages, window=guard.window_seconds, now=ctx.clock()
        )
        if verdict == "tripped":
            await self.posting.tell_paused(lane, binding)
        return verdict == "allow"

    async def human_spoke(
        self, lane: Lane, binding: Binding, *, by_operator: str | None = None
    ) -> Released | None:
        """A human wrote (or an operator released the lane from the dashboard): the lane's
        loop guard resets, and what it held is shown. None when the lane was not paused."""
        released = await self.ctx.store.loop_guard.human_spoke(lane.key)
        if released is None:
            return None
        self.ctx.outbox.adopt(released.items)
        held = len(released.items) + released.not_kept
        who = f" (released by {by_operator})" if by_operator else ""
        if held:
            lost = (f" ({released.not_kept} more were held but not kept: at most "
                    f"{binding.loop_guard.max_messages} are)") if released.not_kept else ""
            text = (f"▶️ Bots resume{who}. {len(released.items)} message(s) they sent while "
                    f"paused are shown above{lost}.")
        else:
            text = f"▶️ Bots resume{who}."
        await self.posting.notice(lane, binding, text)
        return released


class Typing:
    """The typing indicator: shown when a bot was asked to answer, and again while its reply
    streams."""

    def __init__(self, ctx: RelayContext) -> None:
        self.ctx = ctx
        self._shown_at: dict[str, float] = {}
        """Lane → when this process last showed the indicator there (monotonic seconds).
        Only a rate limit: another instance showing it too costs one more indicator."""

    def show(self, lane: Lane) -> None:
        """Tell the chat a bot is working (platforms with a typing indicator), at most
        once per `TYPING_EVERY` seconds per chat: the indicator lasts about five seconds."""
        adapter = self.ctx.adapters.get(lane.channel)
        if adapter is None or not adapter.capabilities.typing:
            return
        now = time.monotonic()
        if now - self._shown_at.get(lane.key, -TYPING_EVERY) < TYPING_EVERY:
            return
        self._shown_at[lane.key] = now

        async def typing() -> None:
            try:
                await adapter.typing(lane.chat_id, lane.thread_id)
            except Exception as exc:  # a missing indicator is not worth more than a line
                log.debug("typing indicator in %s failed: %s", lane.key, exc)

        self.ctx.background.spawn(typing(), name=f"typing:{lane.key}")
