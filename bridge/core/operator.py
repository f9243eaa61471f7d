"""What an operator may do to a running relay (from the dashboard), and how it is recorded.

Each action goes through the store, so every bridge instance sees it and a restart keeps it;
each tells the chat it touched (people there should know why a request ended or why the
bots fell silent) and is logged at INFO with the operator's name — the audit trail.

- cancel a request that is stuck: closed as `failed`, with who cancelled it in its history;
- release what the loop guard holds in a lane, as a human message would;
- pause a binding: its human messages still reach the bots, to observe only (they keep the
  context, none is asked to answer), until it is resumed.
"""

from __future__ import annotations

import logging

from bridge.core.binding import Binding
from bridge.core.context import RelayContext
from bridge.core.outbox import Lane
from bridge.core.posting import LoopGuard, Posting
from bridge.core.spool import binding_key
from bridge.store.loop_guard import Released
from bridge.store.records import Conversation
from bridge.tracking.errors import ConversationClosed, UnknownConversation
from bridge.tracking.vocabulary import FAILED

log = logging.getLogger(__name__)

class OperatorError(Exception):
    """An action that cannot be done as asked; `status` is the HTTP status it maps to."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class Operator:
    """The actions, each `by` a named operator."""

    def __init__(self, ctx: RelayContext, posting: Posting, guard: LoopGuard) -> None:
        self.ctx = ctx
        self.posting = posting
        self.guard = guard
        self.pauses = ctx.pauses

    def binding(self, key: str) -> Binding:
        try:
            binding = self.ctx.bindings.by_key(key)
        except ValueError:
            binding = None
        if binding is None:
            raise OperatorError(f"no binding {key!r} in this bridge's config", 404)
        return binding

    async def cancel(self, request_id: str, *, by: str, reason: str = "") -> Conversation:
        """Close a waiting request as failed and tell its chat."""
        ctx = self.ctx
        conv = await ctx.tracker.get(request_id)
        if conv is None:
            raise OperatorError(str(UnknownConversation(request_id)), 404)
        if conv.finished:
            raise OperatorError(str(ConversationClosed(request_id, conv.status)), 409)
        why = f"cancelled by operator {by}" + (f": {reason}" if reason else "")
        closed = await ctx.tracker.close(request_id, FAILED, why, by=by)
        log.info("operator %s cancelled request %s (%s → %s)%s", by, request_id, conv.from_,
                 conv.to, f": {reason}" if reason else "")
        ctx.events.publish("operator", action="cancel", by=by, request_id=request_id)
        if conv.chat:
            lane = Lane.from_key(conv.chat)
            resolved = ctx.resolve(lane)
            if resolved is not None:
                _, binding = resolved
                await self.posting.notice(
                    lane, binding,
                    f"⛔ Request `{request_id}` ({conv.from_} → {conv.to}) was cancelled by "
                    f"operator {by}" + (f": {reason}" if reason else "."),
                )
                await ctx.refresh_panel(lane)
        return closed

    async def release(self, lane_key: str, *, by: str) -> Released:
        """Show what the loop guard holds in a lane and let its bots go on."""
        ctx = self.ctx
        try:
            lane = Lane.from_key(lane_key)
        except ValueError:
            raise OperatorError(f"{lane_key!r} is not a lane key", 400) from None
        resolved = ctx.resolve(lane)
        if resolved is None:
            raise OperatorError(f"no binding serves the lane {lane_key!r}", 404)
        _, binding = resolved
        released = await self.guard.human_spoke(lane, binding, by_operator=by)
        if released is None:
            raise OperatorError(f"the loop guard holds nothing in {lane_key!r}", 404)
        log.info("operator %s released %d held message(s) in %s (%d not kept)", by,
                 len(released.items), lane_key, released.not_kept)
        ctx.events.publish("operator", action="release", by=by, lane=lane_key)
        return released

    async def pause(self, key: str, *, by: str) -> bool:
        """Pause a binding; False when it was paused already (nothing changes)."""
        binding = self.binding(key)
        changed = await self.pauses.store.pause(binding_key(binding), by, self.ctx.clock())
        self.pauses.forget()
        if changed:
            log.info("operator %s paused binding %s (group %s)", by, key, binding.group)
            self.ctx.events.publish("operator", action="pause", by=by, binding=key)
            await self._tell(binding, f"⏸️ An operator ({by}) paused the bots here: they "
                             "still read this chat but will not answer until it is resumed.")
        return changed

    async def resume(self, key: str, *, by: str) -> bool:
        """Resume a paused binding; False when it was not paused."""
        binding = self.binding(key)
        changed = await self.pauses.store.resume(binding_key(binding))
        self.pauses.forget()
        if changed:
            log.info("operator %s resumed binding %s (group %s)", by, key, binding.group)
            self.ctx.events.publish("operator", action="resume", by=by, binding=key)
            await self._tell(binding, f"▶️ An operator ({by}) resumed the bots here.")
        return changed

    async def _tell(self, binding: Binding, text: str) -> None:
        lane = Lane(binding.channel, binding.chat, binding.thread)
        if binding.channel in self.ctx.adapters:
            await self.posting.notice(lane, binding, text)
