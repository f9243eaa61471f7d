"""Bots → humans: the outbound pipeline for the hub's `channel.deliver`, the inbound one's
mirror, one method per stage in the order they run (`OutboundPipeline._deliver_once`):

binding (`_binding`) → claim: drop a repeated event id (`_claim`, the `evt:` seen key) →
accumulate streamed text (`_accumulate`) → protocol middleware (`_middleware`: track protocol
text; wrap a plain reply to a routed request into its RESPONSE; errors and aborts of such a
reply become `Status: failed`) → loop guard, render and outbox (`Posting.bot_output`: a paused
chat's outputs are held, not dropped).
Returning normally means the output is durably queued — or, a reply to a person on a platform
that posts in process, posted (`Outbox.post_now`) — which is when the link acks.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from bridge.core.binding import Binding
from bridge.core.context import RelayContext
from bridge.core.inbound import accepted_key
from bridge.core.model import OutboundKind
from bridge.core.outbox import Lane
from bridge.core.posting import Posting, Typing
from bridge.core.protocol_flow import (
    PendingRequest,
    depth_violation,
    refusal,
    reply_as_response,
)
from bridge.protocol import parse
from bridge.store import transient
from bridge.text.cut import truncated

log = logging.getLogger(__name__)

TERMINAL_KINDS = frozenset({"final", "error", "aborted"})
CHAIN_TYPES = frozenset({"REQUEST", "CLARIFY", "HANDOFF"})
"""What extends a chain: past the depth limit none of these is relayed as such."""


def may_have_streamed(params: dict[str, Any]) -> bool:
    """Might deltas of this terminal output's run wait in the store? Not if it is the run's
    first output: the BCN numbers a run's outputs from 1, deltas included (the `seq` of
    `channel.deliver`, docs/hub.md), so a terminal output with `seq` 1 streamed nothing.
    Most replies are such, and sparing them the read saves the relay a store query per
    reply; a BCN that does not number its outputs gets the read."""
    seq = params.get("seq")
    return not (isinstance(seq, int) and not isinstance(seq, bool) and seq == 1)


def event_key(params: dict[str, Any]) -> str | None:
    """The `seen` key of a delivery's event id (`evt:…`), which marks it handled."""
    event_id = params.get("event_id")
    return f"evt:{event_id}" if isinstance(event_id, str) and event_id else None


def lane_of(binding: Binding, params: dict[str, Any]) -> Lane:
    """The lane a delivery is for: its binding's chat, in the thread it names (or the
    binding's own)."""
    return Lane(binding.channel, binding.chat, params.get("thread_id") or binding.thread)


def sender_name(params: dict[str, Any], unnamed: str) -> str:
    """The name of the bot a delivery is from (`unnamed` when it gives none)."""
    sender = params.get("sender")
    return str((sender.get("name") if isinstance(sender, dict) else None) or unnamed)


class OutboundPipeline:
    def __init__(self, ctx: RelayContext, posting: Posting, typing: Typing) -> None:
        self.ctx = ctx
        self.posting = posting
        self.typing = typing

    async def deliver(self, params: dict[str, Any]) -> None:
        """Handle one delivery; returning means it is done for good (the link acks it).

        A failure that may pass (the store or a socket: `transient`) raises, and the hub
        sends the output again. Any other failure would repeat on every retry, for ever and
        across restarts: the delivery ends here instead, logged once and told in the chat
        once (`_undeliverable`).
        """
        try:
            await self._deliver_once(params)
        except Exception as exc:
            if transient(exc):
                raise
            await self._undeliverable(params, exc)

    async def _undeliverable(self, params: dict[str, Any], error: Exception) -> None:
        ctx = self.ctx
        bot = sender_name(params, "a bot")
        log.error("%s's output %s can never be shown (%s: %s); it ends here",
                  bot, params.get("event_id"), type(error).__name__, error,
                  exc_info=error)
        binding = self._binding(params)
        if binding is None:
            return
        notice = (f"⚠️ A reply from {bot} could not be shown here "
                  f"({type(error).__name__}: {str(error)[:200]}).")
        await self.posting.post(lane_of(binding, params), binding, notice,
                                sender_label=ctx.bridge_name, kind=OutboundKind.SYSTEM,
                                once=event_key(params))

    async def _deliver_once(self, params: dict[str, Any]) -> None:
        """The delivery itself, its stages in order: binding → claim → accumulate stream →
        protocol middleware → loop guard, render and outbox (`Posting.bot_output`).

        The claim is the event id's `seen` key, remembered in the same transaction that
        queues the output, so a crash between the two cannot make the hub's replay look
        like a duplicate."""
        binding = self._binding(params)
        once = event_key(params)
        replayed, asked_at = await self._claim(params, binding, once)
        if replayed:
            return
        queued = await self._deliver(params, binding, once, asked_at)
        if once is not None and not queued:
            await self.ctx.store.seen.add(once, self.ctx.clock())  # the paths that queued nothing

    def _binding(self, params: dict[str, Any]) -> Binding | None:
        """The binding the hub named (`binding_id`); None for one this bridge does not know."""
        return self.ctx.link.bindings_by_id.get(str(params.get("binding_id")))

    async def _claim(
        self, params: dict[str, Any], binding: Binding | None, once: str | None
    ) -> tuple[bool, datetime | None]:
        """(is it a replay, when was the message it answers accepted): one read for both."""
        source = params.get("source_msg_id")
        asked = (accepted_key(binding.channel, binding.chat, source)
                 if binding is not None and isinstance(source, str) and source else None)
        keys = [key for key in (once, asked) if key]
        seen = await self.ctx.store.seen.seen_at(keys) if keys else {}
        if once is not None and once in seen:
            log.debug("dropping repeated delivery %s", params.get("event_id"))
            return True, None
        return False, seen.get(asked) if asked else None

    async def _deliver(self, params: dict[str, Any], binding: Binding | None,
                       once: str | None, asked_at: datetime | None) -> bool:
        """True when an output was queued (and `once` remembered with it). `asked_at`: when
        the message this output answers was accepted, if it answers one."""
        ctx = self.ctx
        if binding is None:
            log.warning("delivery for unknown binding %r dropped", params.get("binding_id"))
            ctx.metrics.drop("unknown", "out", "unknown_binding")
            return False
        lane = lane_of(binding, params)
        session = str(params.get("bcs_session_id") or "")
        if session and asked_at is None:
            # A reply to a message a bridge accepted is in the session recorded when it was
            # accepted (InboundPipeline.accepted): no read for it. Only output that answers no
            # such message (a bot speaking up) tells the chat's session — and a late reply to
            # a message from before a /new no longer takes the chat back to the old session.
            await ctx.state.set_session(lane.key, session)
        kind = str(params.get("kind") or "final")
        text = str(params.get("text") or "")
        run_id = params.get("run_id") if isinstance(params.get("run_id"), str) else None
        bot = sender_name(params, "bot")
        ctx.events.publish("output", bot=bot, kind=kind, run_id=run_id, lane=lane.key,
                           error=text[:300] if kind == "error" else None)

        if kind == "system":
            return await self.posting.post(lane, binding, text, sender_label="BCN",
                                           kind=OutboundKind.SYSTEM, conversation=session,
                                           once=once)
        accumulated = await self._accumulate(params, binding, lane, kind, run_id, bot, session,
                                             text)
        if accumulated is None:
            return False
        text, streamed = accumulated
        text, protocol, label = await self._middleware(params, binding, lane, kind, bot, text)
        if not text.strip():
            return False
        log.debug("queueing %s's %s reply (run %s)", bot, kind, run_id)
        return await self.posting.bot_output(lane, binding, text, sender_label=label,
                                             run_id=run_id, conversation=session,
                                             protocol=protocol, once=once,
                                             inbound_at=asked_at, streamed=bool(streamed))

    async def _accumulate(
        self,
        params: dict[str, Any],
        binding: Binding,
        lane: Lane,
        kind: str,
        run_id: str | None,
        bot: str,
        session: str,
        text: str,
    ) -> tuple[str, str] | None:
        """Streaming: a delta adds to its run's text in the store and shows the preview so
        far (None: it goes no further); a terminal output takes the run's text — the final's
        own text when it has none — and is cut at `max_reply_chars`. Returns (text, what was
        streamed); None when nothing more is to be shown (a quiet final, an unknown kind)."""
        ctx = self.ctx
        if kind == "delta":
            if run_id is None:
                return None
            seq = params.get("seq")
            if not isinstance(seq, int) or isinstance(seq, bool):
                seq = None  # a BCN that does not number deltas: the store numbers them
            streamed = await ctx.store.streams.append(run_id, seq, text, ctx.clock())
            self.typing.show(lane)
            if streamed.strip() and not await ctx.store.loop_guard.is_paused(lane.key):
                await self.posting.post(lane, binding, truncated(streamed, ctx.max_reply_chars),
                                        sender_label=bot, kind=OutboundKind.DELTA,
                                        run_id=run_id, conversation=session)
            return None
        if kind not in TERMINAL_KINDS:
            log.debug("ignoring delivery kind %r", kind)
            return None
        streamed = (await ctx.store.streams.take(run_id, ctx.clock())
                    if run_id and may_have_streamed(params) else "")
        if kind == "final" and not text:
            text = streamed
        if kind == "final" and not text.strip():
            return None  # a bot that chose to stay quiet (every run must end with a final)
        if len(text) > ctx.max_reply_chars:
            log.warning("%s's reply of %d characters is cut to %d (relay.max_reply_chars)",
                        bot, len(text), ctx.max_reply_chars)
            text = truncated(text, ctx.max_reply_chars)
        return text, streamed

    async def _middleware(
        self,
        params: dict[str, Any],
        binding: Binding,
        lane: Lane,
        kind: str,
        bot: str,
        text: str,
    ) -> tuple[str, dict[str, Any] | None, str]:
        """Decide the text that reaches the chat, and under whose name; track what it says."""
        ctx = self.ctx
        if not binding.protocol.enabled:
            return self._plain_failure(kind, bot, text), None, bot
        pending = await self._pending(params.get("source_msg_id"))
        parsed = parse(text) if kind == "final" else None
        if parsed is None and pending is not None:
            conv = await ctx.tracker.get_in(lane.key, pending.request_id)
            if conv is not None and conv.status in ("open", "clarifying"):
                if kind == "final":
                    text = reply_as_response(pending, text)
                else:
                    reason = text.strip() or ("stopped" if kind == "aborted" else "failed")
                    text = reply_as_response(pending, f"{bot} {kind}: {reason}", "failed")
                parsed = parse(text)
        if parsed is None:
            return self._plain_failure(kind, bot, text), None, bot
        tracked = await ctx.track(parsed, lane)
        violation = depth_violation(parsed) if parsed.type in CHAIN_TYPES else None
        if violation is not None:
            # Past the depth limit only a RESPONSE may follow: the bot's message is not
            # shown as a request; the bridge closes the chain with a failed RESPONSE.
            log.info("%s's %s %s refused: %s", bot, parsed.type, parsed.request_id, violation)
            answer = refusal(parsed, violation, ctx.bridge_name)
            await ctx.tracker.close(tracked.request_id, "failed", violation, ctx.clock())
            await ctx.refresh_panel(lane)
            refused = parse(answer)
            return answer, refused.to_dict() if refused else None, ctx.bridge_name
        return text, parsed.to_dict(), bot

    @staticmethod
    def _plain_failure(kind: str, bot: str, text: str) -> str:
        if kind == "error":
            return f"⚠️ {bot} failed: {text.strip() or 'no reason given'}"
        if kind == "aborted":
            return f"⏹️ {bot} stopped." + (f" {text.strip()}" if text.strip() else "")
        return text

    async def _pending(self, source_msg_id: Any) -> PendingRequest | None:
        if not isinstance(source_msg_id, str) or not source_msg_id:
            return None
        record = await self.ctx.store.message_map.get(f"src:{source_msg_id}")
        return PendingRequest.from_record(record) if record else None
