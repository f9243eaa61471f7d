"""Human → bots: the inbound pipeline, one small step per stage, in DESIGN §4's order.

own echo → duplicate → binding → policy → commands → CLARIFY answers → protocol → link.
Each step either stops the message (returning early) or lets it through; the last step
sends `channel.inbound` and remembers the session the hub used.
"""

from __future__ import annotations

import logging
import re
from dataclasses import asdict, replace
from typing import Any

from bridge.core.binding import Binding
from bridge.core.claims import claim_event, release_quietly
from bridge.core.commands import Commands
from bridge.core.context import RelayContext
from bridge.core.model import Inbound
from bridge.core.outbox import Lane
from bridge.core.posting import LoopGuard, Posting, Typing
from bridge.core.protocol_flow import (
    FORWARDED_TYPES,
    PendingRequest,
    depth_of,
    depth_violation,
    natural_text,
    refusal,
)
from bridge.protocol import DEFAULT_DEPTH, Depth, ProtocolMessage, parse
from bridge.store.records import Conversation
from bridge.tracking.scope import protocol_id

log = logging.getLogger(__name__)

_EXPLICIT_ANSWER = re.compile(r"\s*re:\s*(\S+?):\s*(.*)\Z", re.IGNORECASE | re.DOTALL)


def sent_key(channel: str, chat_id: str, message_id: str) -> str:
    """message_map key of a platform message the bridge itself posted."""
    return f"sent:{channel}|{chat_id}|{message_id}"


def accepted_key(channel: str, chat_id: str, message_id: str) -> str:
    """The `seen` key of one platform message; its time is when the bridge accepted it (a bot
    reply's `source_msg_id` finds it: `bcn_bridge_relay_seconds` needs no write of its own)."""
    return f"in:{channel}|{chat_id}|{message_id}"


def dedupe_key(msg: Inbound) -> str:
    """The `seen` key of one platform message (an edit or a delete is a message of its own)."""
    key = accepted_key(msg.channel, msg.chat_id, msg.message_id)
    if msg.is_edit:
        key += f"|edit:{msg.timestamp.isoformat()}"
    elif msg.is_delete:
        key += "|delete"
    return key


class InboundPipeline:
    def __init__(self, ctx: RelayContext, posting: Posting, guard: LoopGuard, typing: Typing,
                 holder: str = "bcn-bridge") -> None:
        self.ctx = ctx
        self.posting = posting
        self.guard = guard
        self.typing = typing
        self.holder = holder
        """This instance, as its claims on inbound events name it (the relay's instance
        name, which its leases use too)."""
        self.commands = Commands(ctx, posting, self.route_protocol)
        self._handling: dict[str, bool] = {}
        """Keys this process is handling now → whether the message was handed to the BCN yet
        (then the hand-off marked its key seen, and nothing more needs writing). Not the
        duplicate filter across instances, which is the claim in the store; only its first,
        in-process look (see `handle`). Each entry goes when its handling ends."""
        self._warned_unbound: set[str] = set()
        """Unbound chats already logged (once per chat and process is enough to find it)."""

    async def handle(self, msg: Inbound) -> None:
        """Relay one platform message, claiming it first so no two instances both handle it.

        The claim (`seen.claim`, atomic in the store) replaces the old read of the seen key:
        one store statement either way. Its key is marked seen only once the message is safe
        (with the hub, in the spool, or needing nothing more); if handling fails the claim is
        released, so the platform's redelivery is handled instead of lost, and a claimant
        killed mid-handling frees it after `CLAIM_TTL`.

        An adapter that never redelivers (`Capabilities.redelivers` false: the webchat) skips
        the claim, and that is safe with several instances: such a platform hands each event
        to exactly one process (a page's socket is connected to one instance, which gives the
        message a fresh id and filters the page's resends in its room), so there is no second
        instance to race; a repeat inside this process is caught by `_handling`, and one that
        got through anyway is refused by the hub, whose idempotency key is the message id.
        (A claim held by another instance makes this one wait, see `claim_event`: dropping
        the event then would lose it if that instance was killed.)"""
        ctx = self.ctx
        adapter = ctx.adapters.get(msg.channel)
        capabilities = adapter.capabilities if adapter is not None else None
        echoes = capabilities is None or capabilities.echoes_own_posts
        if echoes and await ctx.store.message_map.get(
            sent_key(msg.channel, msg.chat_id, msg.message_id)
        ):
            log.debug("dropping own echo %s", msg.message_id)
            ctx.metrics.drop(msg.channel, "in", "own_echo")
            return
        key = dedupe_key(msg)
        redelivers = capabilities is None or capabilities.redelivers
        # Handled by this very process right now: a repeat, dropped without asking the store
        # (the claim would refuse it, then wait for this process to finish).
        claimed = key not in self._handling
        if claimed and redelivers:
            claimed = await claim_event(ctx.store.seen, key, self.holder)
        if not claimed:
            log.debug("dropping duplicate %s", key)
            ctx.metrics.drop(msg.channel, "in", "duplicate")
            return
        self._handling[key] = False
        try:
            await self._handle(msg)
            if not self._handling[key]:
                await ctx.store.seen.add(key, ctx.clock())
        except BaseException:
            if redelivers:
                await release_quietly(ctx.store.seen, key, self.holder)
            raise
        finally:
            del self._handling[key]

    async def _handle(self, msg: Inbound) -> None:
        ctx = self.ctx
        binding = ctx.bindings.find(msg.channel, msg.chat_id, msg.thread_id)
        if binding is None:
            self._warn_unbound_once(msg.channel, msg.chat_id)
            ctx.metrics.drop(msg.channel, "in", "unbound")
            return
        if (msg.is_edit or msg.is_delete) and not binding.relay_edits:
            log.debug("ignoring an edit or delete in %s (relay_edits is off)", binding.channel)
            ctx.metrics.drop(msg.channel, "in", "edits_off")
            return
        if not allowed(binding, msg):
            log.info("ignoring %s in %s: sender not in allow_from", msg.sender.id, binding.chat)
            ctx.metrics.drop(msg.channel, "in", "not_allowed")
            return
        lane = Lane(msg.channel, msg.chat_id, msg.thread_id)
        if msg.is_delete:
            # BCN has no deletes: the bots are told, and nobody is asked to answer.
            await self.send(msg, binding, lane, text=msg.text, deliver="observe")
            return
        ctx.events.publish("inbound", channel=msg.channel, lane=lane.key,
                           sender=msg.sender.name, is_bot=msg.sender.is_bot)
        if not msg.sender.is_bot:
            await self.guard.human_spoke(lane, binding)
        elif not await self.guard.bot_turn(lane, binding):
            # The loop guard paused this chat: the bots still see it, none is asked to answer.
            await self.send(msg, binding, lane, text=msg.text, deliver="observe")
            return
        if await ctx.pauses.of(binding) is not None:
            # An operator paused the binding: the same, until they resume it.
            await self.send(msg, binding, lane, text=msg.text, deliver="observe")
            return
        if await self.commands.handle(msg, binding, lane):
            return
        if await self._answer_clarify(msg, binding, lane):
            return
        parsed = as_sent(msg, parse(msg.text)) if binding.protocol.enabled else None
        if parsed is not None:
            await self._protocol(msg, binding, lane, parsed)
            return
        deliver = "auto" if await self._addressed(binding, msg) else "observe"
        await self.send(msg, binding, lane, text=msg.text, deliver=deliver)

    def _warn_unbound_once(self, channel: str, chat_id: str) -> None:
        key = f"{channel}|{chat_id}"
        if key not in self._warned_unbound:
            self._warned_unbound.add(key)
            log.info("ignoring messages from unbound chat %s (chat id %r)", channel, chat_id)

    # ------------------------------------------------------------------ policy
    async def _addressed(self, binding: Binding, msg: Inbound) -> bool:
        """With `require_mention`, only messages naming a group bot ask for an answer."""
        if not binding.require_mention:
            return True
        mentioned = {name.casefold().lstrip("@") for name in msg.mentions}
        text = msg.text.casefold()
        return any(
            bot.casefold() in mentioned or f"@{bot.casefold()}" in text
            for bot in (await self.ctx.bots(binding)).names
        )

    # ------------------------------------------------------------------ CLARIFY answers
    async def _answer_clarify(self, msg: Inbound, binding: Binding, lane: Lane) -> bool:
        """A human's reply to a bot's CLARIFY answers it inside the same conversation.

        Not where the binding's protocol is off: the bridge neither parses nor tracks
        protocol text there, so it answers no question in it either (nor reads the store
        to look for one)."""
        if msg.sender.is_bot or not binding.protocol.enabled:
            return False
        conv, answer = await self._clarify_target(msg, lane)
        if conv is None:
            return False
        asker = conv.history[-1].from_ if conv.history else conv.to
        bot = (await self.ctx.bots(binding)).named(asker)
        if bot is None:
            return False  # a platform bot asked; it reads the chat itself
        depth = Depth(*conv.depth) if conv.depth else DEFAULT_DEPTH
        await self.ctx.tracker.answer(conv.request_id, msg.sender.name, answer, self.ctx.clock())
        await self.ctx.refresh_panel(lane)
        request_id = protocol_id(conv)  # as the bot wrote it, not the chat-scoped key
        pending = PendingRequest(
            request_id, requester=conv.from_, bot=bot,
            depth=depth, original_from=conv.original_from,
        )
        await self.ctx.store.message_map.put(
            f"src:{msg.message_id}", pending.to_record(), self.ctx.clock()
        )
        await self.send(
            msg, binding, lane, text=f"Re: {request_id}: {answer}", deliver="auto",
            routing=route_to(bot),
            protocol={"type": "RESPONSE", "request_id": request_id,
                      "from": msg.sender.name, "to": bot},
        )
        return True

    async def _clarify_target(
        self, msg: Inbound, lane: Lane
    ) -> tuple[Conversation | None, str]:
        tracker = self.ctx.tracker
        explicit = _EXPLICIT_ANSWER.match(msg.text)
        if explicit:
            conv = await tracker.get_in(lane.key, explicit.group(1))
            if conv is not None and conv.status == "clarifying":
                return conv, explicit.group(2).strip()
        if msg.reply_to:
            info = await self.ctx.store.message_map.get(
                sent_key(msg.channel, msg.chat_id, msg.reply_to)
            )
            if info and info.get("type") == "CLARIFY" and info.get("request_id"):
                conv = await tracker.get_in(lane.key, info["request_id"])
                if conv is not None and conv.status == "clarifying":
                    return conv, msg.text
        # Without a reply: the one question in this chat addressed to this person.
        if not await self.ctx.state.may_clarify(lane.key):
            return None, ""
        clarifying = await tracker.list(status="clarifying", chat=lane.key)
        if not clarifying:
            await self.ctx.state.set_may_clarify(lane.key, False)
        waiting = [
            conv for conv in clarifying
            if conv.history and conv.history[-1].type == "CLARIFY"
            and conv.history[-1].to.casefold() == msg.sender.name.casefold()
        ]
        if len(waiting) == 1:
            return waiting[0], msg.text
        return None, ""

    # ------------------------------------------------------------------ protocol
    async def _protocol(
        self, msg: Inbound, binding: Binding, lane: Lane, parsed: ProtocolMessage
    ) -> None:
        violation = depth_violation(parsed)
        if violation is not None:
            tracked = await self.ctx.track(parsed, lane)
            answer = refusal(parsed, violation, self.ctx.bridge_name)
            refused = parse(answer)
            await self.posting.post(
                lane, binding, answer, sender_label=self.ctx.bridge_name,
                protocol=refused.to_dict() if refused else None,
            )
            await self.ctx.tracker.close(tracked.request_id, "failed", violation, self.ctx.clock())
            await self.ctx.refresh_panel(lane)
            # The bots still see the exchange, but nobody is asked to act on it.
            await self.send(msg, binding, lane, text=msg.text, deliver="observe",
                            protocol=wire_protocol(parsed))
            return
        await self.route_protocol(msg, binding, lane, msg.text, parsed)

    async def route_protocol(
        self,
        msg: Inbound,
        binding: Binding,
        lane: Lane,
        text: str,
        parsed: ProtocolMessage | None = None,
    ) -> None:
        """Track a protocol message and send it to exactly the bot it addresses."""
        parsed = as_sent(msg, parsed or parse(text))
        if parsed is None:
            await self.send(msg, binding, lane, text=text, deliver="auto")
            return
        await self.ctx.track(parsed, lane)
        bot = (await self.ctx.bots(binding)).named(parsed.to or "")
        if bot is None or parsed.type == "BROADCAST":
            # Addressed to someone outside BCN (or to everyone): bots observe, none answer.
            await self.send(msg, binding, lane, text=text, deliver="observe",
                            protocol=wire_protocol(parsed))
            return
        if parsed.type in FORWARDED_TYPES:
            pending = PendingRequest(
                parsed.request_id, requester=parsed.from_ or msg.sender.name, bot=bot,
                depth=depth_of(parsed), original_from=parsed.original_from,
            )
            await self.ctx.store.message_map.put(
                f"src:{msg.message_id}", pending.to_record(), self.ctx.clock()
            )
        body = natural_text(parsed) if binding.protocol.deliver == "natural" else text
        await self.send(msg, binding, lane, text=body, deliver="auto", routing=route_to(bot),
                        protocol=wire_protocol(parsed))

    # ------------------------------------------------------------------ the link
    async def send(
        self,
        msg: Inbound,
        binding: Binding,
        lane: Lane,
        *,
        text: str,
        deliver: str,
        routing: dict[str, Any] | None = None,
        protocol: dict[str, Any] | None = None,
    ) -> None:
        """Hand the message to the BCN (now, or from the spool once the link is back)."""
        msg_id = msg.message_id
        if msg.is_edit:
            # An edit is a new message to the bots (BCN has no edits), with its own id so the
            # hub's duplicate filter does not take it for the original.
            msg_id = f"{msg.message_id}#edit-{int(msg.timestamp.timestamp())}"
            text = f"(edited) {text}"
        elif msg.is_delete:
            msg_id = f"{msg.message_id}#deleted"
            text = f"(deleted) {text}".rstrip()
        params: dict[str, Any] = {
            "msg_id": msg_id,
            "sender": {"user_id": msg.sender.id, "name": msg.sender.name,
                       "is_bot": msg.sender.is_bot},
            "text": text,
            "mentions": list(msg.mentions),
            "attachments": [
                {k: v for k, v in asdict(a).items() if v is not None} for a in msg.attachments
            ],
            "deliver": deliver,
        }
        if msg.thread_id:
            params["thread_id"] = msg.thread_id
        if msg.reply_to:
            params["reply_to_msg_id"] = msg.reply_to
        if routing:
            params["routing"] = routing
        if protocol:
            params["protocol"] = protocol
        key = dedupe_key(msg)
        if key in self._handling:
            self._handling[key] = True
        log.debug("handing message %s to the BCN (deliver: %s)", msg_id, deliver)
        await self.ctx.spool.hand_off(lane, binding, params, key)

    async def accepted(self, lane: Lane, payload: dict[str, Any]) -> None:
        """The hub took a message: remember its session (for `/stop`), show typing."""
        if session := payload.get("bcs_session_id"):
            await self.ctx.state.set_session(lane.key, str(session))
        if any(d.get("method") == "chat.send" for d in payload.get("deliveries") or []
               if isinstance(d, dict)):
            self.typing.show(lane)


def as_sent(msg: Inbound, parsed: ProtocolMessage | None) -> ProtocolMessage | None:
    """A protocol message as its sender may send it: a person's is always their own.

    Whatever its `From:` says, text a person typed is tracked, routed and answered as that
    person's (a visitor typing `From: Rules` does not speak for the bot Rules). Platform bots
    keep their `From:` — the bot-to-bot protocol is theirs."""
    if parsed is None or msg.sender.is_bot or parsed.from_ == msg.sender.name:
        return parsed
    return replace(parsed, from_=msg.sender.name)


def allowed(binding: Binding, msg: Inbound) -> bool:
    if binding.allow_from is None:
        return True
    return msg.sender.id in binding.allow_from or msg.sender.name in binding.allow_from


def route_to(bot: str) -> dict[str, Any]:
    return {"responders": [{"type": "name", "value": bot}], "mode": "required",
            "reason": "text-protocol message addressed to this bot", "include_self": False}


def wire_protocol(parsed: ProtocolMessage) -> dict[str, Any]:
    depth = depth_of(parsed)
    return {"type": parsed.type, "request_id": parsed.request_id, "from": parsed.from_,
            "to": parsed.to, "depth": {"current": depth.current, "max": depth.max}}
