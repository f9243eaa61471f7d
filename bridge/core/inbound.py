"""Human → bots: the inbound pipeline, one method per stage, in the order they run.

own echo → claim → binding → policy → loop guard → commands → protocol middleware (CLARIFY
answers, protocol text) → hand off. `InboundPipeline.handle` reads as that list: each stage
either stops the message (returning early) or lets it through; the last one sends
`channel.inbound` (now, or from the spool) and `accepted` remembers the session the hub used.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, replace
from enum import Enum
from typing import Any

from bridge.core.adapter import Capabilities
from bridge.core.binding import Binding
from bridge.core.claims import claim_event, release_quietly
from bridge.core.commands import Commands
from bridge.core.context import RelayContext
from bridge.core.model import Inbound
from bridge.core.outbox import Lane
from bridge.core.plain_answers import plausible_answer
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


class Progress(Enum):
    """How far this process got with an inbound event it is handling."""

    HANDLING = "handling"
    """Claimed and being handled: when it ends, its key is marked seen."""
    HANDED_OFF = "handed off"
    """Handed to the BCN: the hand-off's own write marked the key seen already."""


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


@dataclass(frozen=True, slots=True)
class HandOff:
    """What the BCN is to get for one platform message (the protocol middleware's decision):
    its text, whether a bot is asked to answer (`auto`) or all only see it (`observe`), and
    the optional `routing` and `protocol` objects of `channel.inbound`."""

    text: str
    deliver: str
    routing: dict[str, Any] | None = None
    protocol: dict[str, Any] | None = None


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
        self._handling: dict[str, Progress] = {}
        """Keys this process is handling now → how far each got (once handed to the BCN, the
        hand-off marked its key seen, and nothing more needs writing). Not the duplicate
        filter across instances, which is the claim in the store; only its first, in-process
        look (see `handle`). Each entry goes when its handling ends."""
        self._warned_unbound: set[str] = set()
        """Unbound chats already logged (once per chat and process is enough to find it)."""

    async def handle(self, msg: Inbound) -> None:
        """Relay one platform message: the stages in order, each a method that either stops
        the message (returns early) or passes it on.

        own echo → claim → binding → policy → loop guard → commands → protocol middleware →
        hand off.

        The claim (`seen.claim`, atomic in the store) replaces the old read of the seen key:
        one store statement either way. Its key is marked seen only once the message is safe
        (with the hub, in the spool, or needing nothing more); if handling fails the claim is
        released, so the platform's redelivery is handled instead of lost, and a claimant
        killed mid-handling frees it after `CLAIM_TTL`. It comes before the binding, as the
        seen key always did: a redelivered message is dropped as a duplicate whatever its chat.

        An adapter that never redelivers (`Capabilities.redelivers` false: the webchat) skips
        the claim, and that is safe with several instances: such a platform hands each event
        to exactly one process (a page's socket is connected to one instance, which gives the
        message a fresh id and filters the page's resends in its room), so there is no second
        instance to race; a repeat inside this process is caught by `_handling`, and one that
        got through anyway is refused by the hub, whose idempotency key is the message id.
        (A claim held by another instance makes this one wait, see `claim_event`: dropping
        the event then would lose it if that instance was killed.)"""
        if await self._own_echo(msg):
            return
        async with self._claim(msg) as claimed:
            if not claimed:
                return
            binding = self._binding(msg)
            if binding is None or not self._policy(msg, binding):
                return
            lane = Lane(msg.channel, msg.chat_id, msg.thread_id)
            if not await self._loop_guard(msg, binding, lane):
                return
            if await self.commands.handle(msg, binding, lane):
                return
            decided = await self._protocol_middleware(msg, binding, lane)
            await self.hand_off(msg, binding, lane, decided)

    # ------------------------------------------------------------------ own echo, claim
    def _capabilities(self, msg: Inbound) -> Capabilities | None:
        adapter = self.ctx.adapters.get(msg.channel)
        return adapter.capabilities if adapter is not None else None

    def _redelivers(self, msg: Inbound) -> bool:
        capabilities = self._capabilities(msg)
        return capabilities is None or capabilities.redelivers

    async def _own_echo(self, msg: Inbound) -> bool:
        """A platform message the bridge itself posted (recorded when the outbox sent it)."""
        capabilities = self._capabilities(msg)
        echoes = capabilities is None or capabilities.echoes_own_posts
        if echoes and await self.ctx.store.message_map.get(
            sent_key(msg.channel, msg.chat_id, msg.message_id)
        ):
            log.debug("dropping own echo %s", msg.message_id)
            self.ctx.metrics.drop(msg.channel, "in", "own_echo")
            return True
        return False

    @asynccontextmanager
    async def _claim(self, msg: Inbound) -> AsyncIterator[bool]:
        """Claim the message for this instance for the handling inside: False for a duplicate
        (nothing to do). When the handling ends the key is seen (unless the hand-off marked
        it already); when it fails the claim is released."""
        key = dedupe_key(msg)
        redelivers = self._redelivers(msg)
        # Handled by this very process right now: a repeat, dropped without asking the store
        # (the claim would refuse it, then wait for this process to finish).
        claimed = key not in self._handling
        if claimed and redelivers:
            claimed = await claim_event(self.ctx.store.seen, key, self.holder)
        if not claimed:
            log.debug("dropping duplicate %s", key)
            self.ctx.metrics.drop(msg.channel, "in", "duplicate")
            yield False
            return
        self._handling[key] = Progress.HANDLING
        try:
            yield True
            if self._handling[key] is not Progress.HANDED_OFF:
                await self.ctx.store.seen.add(key, self.ctx.clock())
        except BaseException:
            if redelivers:
                await release_quietly(self.ctx.store.seen, key, self.holder)
            raise
        finally:
            del self._handling[key]

    # ------------------------------------------------------------------ binding, policy
    def _binding(self, msg: Inbound) -> Binding | None:
        """The most specific binding of the message's chat; an unbound chat is logged once."""
        binding = self.ctx.bindings.find(msg.channel, msg.chat_id, msg.thread_id)
        if binding is None:
            self._warn_unbound_once(msg.channel, msg.chat_id)
            self.ctx.metrics.drop(msg.channel, "in", "unbound")
        return binding

    def _warn_unbound_once(self, channel: str, chat_id: str) -> None:
        key = f"{channel}|{chat_id}"
        if key not in self._warned_unbound:
            self._warned_unbound.add(key)
            log.info("ignoring messages from unbound chat %s (chat id %r)", channel, chat_id)

    def _policy(self, msg: Inbound, binding: Binding) -> bool:
        """Edits and deletes only where the binding relays them; senders in `allow_from`."""
        if (msg.is_edit or msg.is_delete) and not binding.relay_edits:
            log.debug("ignoring an edit or delete in %s (relay_edits is off)", binding.channel)
            self.ctx.metrics.drop(msg.channel, "in", "edits_off")
            return False
        if not allowed(binding, msg):
            log.info("ignoring %s in %s: sender not in allow_from", msg.sender.id, binding.chat)
            self.ctx.metrics.drop(msg.channel, "in", "not_allowed")
            return False
        return True

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

    # ------------------------------------------------------------------ loop guard
    async def _loop_guard(self, msg: Inbound, binding: Binding, lane: Lane) -> bool:
        """False when the message goes no further than the bots' eyes: a deletion (BCN has
        no deletes), a platform bot's message in a chat the loop guard paused, any message
        in a binding an operator paused. They are handed off as `observe` (the bots see it,
        none is asked to answer). A human message resets the guard and shows what it held."""
        observe = HandOff(msg.text, "observe")
        if msg.is_delete:
            await self.hand_off(msg, binding, lane, observe)
            return False
        self.ctx.events.publish("inbound", channel=msg.channel, lane=lane.key,
                                sender=msg.sender.name, is_bot=msg.sender.is_bot)
        if not msg.sender.is_bot:
            await self.guard.human_spoke(lane, binding)
        elif not await self.guard.bot_turn(lane, binding):
            await self.hand_off(msg, binding, lane, observe)
            return False
        if await self.ctx.pauses.of(binding) is not None:
            await self.hand_off(msg, binding, lane, observe)
            return False
        return True

    # ------------------------------------------------------------------ protocol middleware
    async def _protocol_middleware(self, msg: Inbound, binding: Binding, lane: Lane) -> HandOff:
        """What the bots get: an answer to a bot's CLARIFY, protocol text routed to the bot
        it addresses (or refused past its depth), or the text as it is."""
        answer = await self._answer_clarify(msg, binding, lane)
        if answer is not None:
            return answer
        parsed = as_sent(msg, parse(msg.text)) if binding.protocol.enabled else None
        if parsed is not None:
            return await self._protocol(msg, binding, lane, parsed)
        deliver = "auto" if await self._addressed(binding, msg) else "observe"
        return HandOff(msg.text, deliver)

    # ------------------------------------------------------------------ CLARIFY answers
    async def _answer_clarify(
        self, msg: Inbound, binding: Binding, lane: Lane
    ) -> HandOff | None:
        """A human's reply to a bot's CLARIFY answers it inside the same conversation.

        Not where the binding's protocol is off: the bridge neither parses nor tracks
        protocol text there, so it answers no question in it either (nor reads the store
        to look for one)."""
        if msg.sender.is_bot or not binding.protocol.enabled:
            return None
        conv, answer = await self._clarify_target(msg, lane)
        if conv is None:
            return None
        asker = conv.history[-1].from_ if conv.history else conv.to
        bot = (await self.ctx.bots(binding)).named(asker)
        if bot is None:
            return None  # a platform bot asked; it reads the chat itself
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
        return HandOff(
            f"Re: {request_id}: {answer}", "auto", routing=route_to(bot),
            protocol={"type": "RESPONSE", "request_id": request_id,
                      "from": msg.sender.name, "to": bot},
        )

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
        if len(waiting) != 1:
            return None, ""
        [conv] = waiting
        decisions = self.ctx.decisions
        card = await decisions.latest_card(conv.request_id) if decisions is not None else None
        if not plausible_answer(msg.text, asker=conv.history[-1].from_,
                                options=card.options if card is not None else (),
                                mentions=msg.mentions):
            return None, ""  # talk, not an answer: the question keeps waiting
        return conv, msg.text

    # ------------------------------------------------------------------ protocol text
    async def _protocol(
        self, msg: Inbound, binding: Binding, lane: Lane, parsed: ProtocolMessage
    ) -> HandOff:
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
            return HandOff(msg.text, "observe", protocol=wire_protocol(parsed))
        return await self._routed(msg, binding, lane, msg.text, parsed)

    async def route_protocol(self, msg: Inbound, binding: Binding, lane: Lane, text: str) -> None:
        """Track a protocol text (`/ask`'s REQUEST) and hand it to exactly the bot it
        addresses: the protocol middleware and the hand-off, for a command."""
        await self.hand_off(msg, binding, lane, await self._routed(msg, binding, lane, text))

    async def _routed(
        self,
        msg: Inbound,
        binding: Binding,
        lane: Lane,
        text: str,
        parsed: ProtocolMessage | None = None,
    ) -> HandOff:
        """Track a protocol message; it goes to exactly the bot it addresses."""
        parsed = as_sent(msg, parsed or parse(text))
        if parsed is None:
            return HandOff(text, "auto")
        await self.ctx.track(parsed, lane)
        bot = (await self.ctx.bots(binding)).named(parsed.to or "")
        if bot is None or parsed.type == "BROADCAST":
            # Addressed to someone outside BCN (or to everyone): bots observe, none answer.
            return HandOff(text, "observe", protocol=wire_protocol(parsed))
        if parsed.type in FORWARDED_TYPES:
            pending = PendingRequest(
                parsed.request_id, requester=parsed.from_ or msg.sender.name, bot=bot,
                depth=depth_of(parsed), original_from=parsed.original_from,
            )
            await self.ctx.store.message_map.put(
                f"src:{msg.message_id}", pending.to_record(), self.ctx.clock()
            )
        body = natural_text(parsed) if binding.protocol.deliver == "natural" else text
        return HandOff(body, "auto", routing=route_to(bot), protocol=wire_protocol(parsed))

    # ------------------------------------------------------------------ hand off
    async def hand_off(self, msg: Inbound, binding: Binding, lane: Lane, decided: HandOff) -> None:
        """Hand the message to the BCN (now, or from the spool once the link is back)."""
        text, deliver = decided.text, decided.deliver
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
        if decided.routing:
            params["routing"] = decided.routing
        if decided.protocol:
            params["protocol"] = decided.protocol
        key = dedupe_key(msg)
        if key in self._handling:
            self._handling[key] = Progress.HANDED_OFF
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
