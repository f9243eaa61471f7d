"""A tap on a card settles a bot's question once, everywhere it is shown.

A card (`bridge.core.cards`) is written to the store when it is posted, under its key, and
every post of it adds where it landed. A tap then goes:

    button data → the card record → same chat? → still open? → may this person answer?
    → the decision claim → the answer, as a typed one → every post of the card redrawn

- **Identity** is the platform's: the adapter builds the `Tap` from the signed interaction
  (Discord's interaction user, Slack's verified payload, Telegram's `callback_query.from`,
  the webchat's session), never from text or button data.
- **The decision is one claim in the store** (`seen.add` of the card's `decision`, atomic
  on memory, SQLite and Redis): of taps through any chat and any instance at once, exactly
  one is first; the others are told who answered, and nothing more reaches the bot.
- **The answer reaches the bot as a typed answer does today**: an inbound `Re: <id>:
  <answer>` from the person who tapped, through the same pipeline (tracked as the
  request's answer, forwarded inside the conversation, naming who answered).
- **Stop** is `/stop` for the chat from that person, and closes the request.

Data the bridge never issued, or a card of another chat, is answered "not a button of this
chat" and logged once per chat, so a flood of forged taps cannot flood the log.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from bridge.core.cards import (
    OWN_WORDS,
    STOP,
    Card,
    card_key,
    card_post_key,
    card_record_key,
    read_button_data,
    requester_key,
)
from bridge.core.model import Inbound, Outbound, OutboundKind, PlatformRef, Sender
from bridge.core.outbox import Lane
from bridge.core.taps import Tap, TapReply
from bridge.protocol.options import options_in

if TYPE_CHECKING:
    from bridge.core.binding import Binding
    from bridge.core.context import RelayContext
    from bridge.store.records import Conversation

log = logging.getLogger(__name__)

CARDS_PER_REQUEST = 20
"""Cards of one request remembered for its expiry (a question asked again gets a new one)."""
WINNER_READS = 20
WINNER_READ_PAUSE = 0.05
"""A tap that lost the claim reads the winner's outcome up to 20 times, 50 ms apart."""
FORGED_LOGGED_KEPT = 1024
"""Chats whose forged taps were logged (once each); older ones are forgotten."""


InboundHandler = Callable[[Inbound], Awaitable[None]]


class Decisions:
    """Cards out, taps in (see the module doc)."""

    def __init__(self, ctx: RelayContext, handle: InboundHandler) -> None:
        self.ctx = ctx
        self.handle = handle
        self._forged_logged: dict[str, None] = {}

    # ------------------------------------------------------------------ cards out
    async def issue(self, lane: Lane, binding: Binding, protocol: dict[str, Any],
                    run_id: str | None = None) -> Card | None:
        """The card for a CLARIFY about to be posted in `lane`, written to the store; None
        when the question is not one a tap could answer (not tracked, already settled)."""
        request_id = protocol.get("request_id")
        if protocol.get("type") != "CLARIFY" or not isinstance(request_id, str):
            return None
        conv = await self.ctx.tracker.get_in(lane.key, request_id)
        if conv is None:
            return None
        asked = next((entry for entry in reversed(conv.history) if entry.type == "CLARIFY"),
                     None)
        asked_at = asked.at.isoformat() if asked is not None else conv.updated_at.isoformat()
        key = card_key(lane.key, conv.request_id, asked_at)
        kept = await self._card(key)
        if kept is not None:
            return kept  # a retry of the same post
        depth = protocol.get("depth") or {}
        meta = protocol.get("meta") or {}
        asked_by = await self.ctx.store.message_map.get(requester_key(lane.key, request_id))
        card = Card(
            key=key,
            # One bot run delivered to every chat bound to the group is one question: its
            # run id is the same in each, so the first answer in any of them settles all.
            decision=run_id or f"{conv.request_id}@{asked_at}",
            request_id=request_id,
            question=str(protocol.get("question") or ""),
            asker=str(protocol.get("from") or conv.to),
            requester=str(protocol.get("to") or conv.from_),
            requester_id=str(asked_by["id"]) if asked_by else None,
            depth=(int(depth.get("current", 1)), int(depth.get("max", 5))),
            deadline=conv.deadline,
            options=options_in(meta),
            lane=lane.key,
        )
        await self._save(card)
        cards = await self.ctx.store.message_map.get(f"cards:{conv.request_id}") or {}
        keys = [*cards.get("keys", []), key][-CARDS_PER_REQUEST:]
        await self.ctx.store.message_map.put(f"cards:{conv.request_id}", {"keys": keys},
                                             self.ctx.clock())
        shown = await self.ctx.store.message_map.get(f"decision-cards:{card.decision}") or {}
        keys = [*shown.get("keys", []), key][-CARDS_PER_REQUEST:]
        await self.ctx.store.message_map.put(f"decision-cards:{card.decision}",
                                             {"keys": keys}, self.ctx.clock())
        return card

    async def posted(self, key: str) -> None:
        """The card `key` is now posted and its post on record. A tap (or the question's
        end) that settled it meanwhile found no post to redraw: draw it as it stands."""
        card = await self._card(key)
        if card is not None and not card.is_open:
            await self._redraw(card)

    # ------------------------------------------------------------------ taps in
    async def tap(self, tap: Tap) -> TapReply:
        """Settle `tap` (see the module doc); never raises for anything a person can send."""
        read = read_button_data(tap.data)
        card = await self._card(read[0]) if read is not None else None
        if read is None or card is None or not self._same_chat(card, tap):
            self._forged(tap)
            return TapReply("That button is not one of this chat's.")
        return await self._decide(card, read[1], tap, platform=tap.channel_type)

    async def operator_answer(self, request_id: str, operator: str, *, choice: str,
                              text: str | None = None) -> TapReply | None:
        """An operator answers from the dashboard: `choice` an option's text, `own` (with
        `text`) or `stop`. The dashboard's sign-in is the identity (operators may answer
        any question, whatever the binding's `answers`); the answer reaches the bot from
        the question's chat as the operator's. None when the request shows no open card."""
        card = await self.open_card(request_id)
        if card is None:
            return None
        if choice in (STOP, OWN_WORDS):
            picked = choice
        elif choice in card.options:
            picked = str(card.options.index(choice))
        else:
            return TapReply(f"{choice!r} is not one of this question's choices.", card=card)
        lane = Lane.from_key(card.lane)
        channel_type, _, account = lane.channel.partition(":")
        tap = Tap(channel_type=channel_type, account=account, chat_id=lane.chat_id,
                  sender=Sender(f"dashboard:{operator}", operator), data="",
                  thread_id=lane.thread_id, text=text)
        return await self._decide(card, picked, tap, platform="dashboard", check_who=False)

    async def open_card(self, request_id: str) -> Card | None:
        """The newest open card of a request (by its store key), if any."""
        card = await self.latest_card(request_id)
        return card if card is not None and card.is_open else None

    async def latest_card(self, request_id: str) -> Card | None:
        """The newest card of a request (by its store key), open or settled, if any."""
        cards = await self.ctx.store.message_map.get(f"cards:{request_id}")
        for key in reversed((cards or {}).get("keys", [])):
            card = await self._card(key)
            if card is not None:
                return card
        return None

    async def _decide(self, card: Card, choice: str, tap: Tap, *, platform: str,
                      check_who: bool = True) -> TapReply:
        if not card.is_open:
            return TapReply(self._settled_text(card), card=card)
        settled = await self._settled_elsewhere(card)
        if settled is not None:
            return TapReply(self._settled_text(settled), card=settled)
        binding = self.ctx.bindings.find(tap.channel, tap.chat_id, tap.thread_id)
        conv = await self.ctx.tracker.get_in(card.lane, card.request_id)
        if conv is None or conv.status != "clarifying" or conv.deadline is None:
            ended = "expired" if conv is not None and conv.status in ("timeout", "expired") \
                else "closed"
            settled = await self._settle(card, ended, f"This question has {ended}.")
            return TapReply(self._settled_text(settled), card=settled)
        if conv.deadline <= self.ctx.clock():
            settled = await self._settle(card, "expired", "This question has expired.")
            return TapReply(self._settled_text(settled), card=settled)
        if check_who and (binding is None or not self._may_answer(binding, card, tap)):
            return TapReply("This question is not yours to answer.", card=card)
        if choice == OWN_WORDS and not (tap.text or "").strip():
            return TapReply("Type your answer.", card=card, wants_own_words=True)
        answer = self._answer_text(card, choice, tap)
        if answer is None:
            self._forged(tap)
            return TapReply("That button is not one of this chat's.")
        if not await self.ctx.store.seen.add(f"decision:{card.decision}", self.ctx.clock()):
            settled = await self._winners_outcome(card)
            return TapReply(self._settled_text(settled) if settled else "Already answered.",
                            card=settled or card)
        if choice == STOP:
            outcome = f"stopped by {tap.sender.name} ({platform})"
        else:
            outcome = f"answered by {tap.sender.name} ({platform}): {answer}"
        settled = await self._settle(card, "answered", outcome)
        await self.handle(self._as_typed(tap, card, choice, answer))
        await self._settle_others(card, "answered", outcome)
        if choice == STOP:
            await self.ctx.tracker.close(conv.request_id, "failed",
                                         f"stopped by {tap.sender.name}", self.ctx.clock())
        self.ctx.events.publish("decision", lane=card.lane, request_id=card.request_id,
                                by=tap.sender.name, platform=platform, answer=answer)
        return TapReply("Stopped." if choice == STOP else f"Answered: {answer}",
                        accepted=True, card=settled)

    async def moved_on(self, conv: Conversation) -> None:
        """The conversation no longer waits for its question: answered by typing (an
        `ANSWER` entry), or finished. Its open cards say which; a later tap is told so."""
        if conv.finished:
            await self.ended(conv.request_id, conv.status)
            return
        answer = next((entry for entry in reversed(conv.history) if entry.type == "ANSWER"),
                      None)
        if answer is None:
            return
        cards = await self.ctx.store.message_map.get(f"cards:{conv.request_id}")
        for key in (cards or {}).get("keys", []):
            card = await self._card(key)
            if card is not None and card.is_open:
                await self._settle(card, "answered", f"answered by {answer.from_} (typed)")

    async def ended(self, request_id: str, state: str) -> None:
        """The request (its store key) timed out or closed: each of its cards still open
        says so and loses its buttons; a later tap is answered the same."""
        cards = await self.ctx.store.message_map.get(f"cards:{request_id}")
        for key in (cards or {}).get("keys", []):
            card = await self._card(key)
            if card is not None and card.is_open:
                ended = "expired" if state in ("timeout", "expired") else "closed"
                await self._settle(card, ended, f"This question has {ended}.", record=False)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _same_chat(card: Card, tap: Tap) -> bool:
        lane = Lane.from_key(card.lane)
        return lane.channel == tap.channel and lane.chat_id == tap.chat_id

    @staticmethod
    def _may_answer(binding: Binding, card: Card, tap: Tap) -> bool:
        who = binding.answers
        if who == "anyone":
            return True
        if who == "requester":
            return card.requester_id is not None and tap.sender.id == card.requester_id
        allowed = set(who)
        return tap.sender.id in allowed or any(role in allowed for role in tap.roles)

    @staticmethod
    def _answer_text(card: Card, choice: str, tap: Tap) -> str | None:
        if choice == STOP:
            return "stop"
        if choice == OWN_WORDS:
            return " ".join((tap.text or "").split())
        index = int(choice)
        return card.options[index] if index < len(card.options) else None

    def _as_typed(self, tap: Tap, card: Card, choice: str, answer: str) -> Inbound:
        """The tap as the message the person could have typed for it."""
        text = f"/{self.ctx.commands.stop}" if choice == STOP \
            else f"Re: {card.request_id}: {answer}"
        return Inbound(
            channel_type=tap.channel_type, account=tap.account, chat_id=tap.chat_id,
            message_id=f"tap-{card.key}-{tap.tap_id or tap.sender.id}",
            sender=tap.sender, text=text, thread_id=tap.thread_id,
            timestamp=self.ctx.clock(),
        )

    @staticmethod
    def _settled_text(card: Card) -> str:
        if card.state == "answered":
            return f"Already {card.outcome}."
        return card.outcome or f"This question has {card.state}."

    async def _settled_elsewhere(self, card: Card) -> Card | None:
        """The card as settled by another chat's card of the same question, if it was."""
        record = await self.ctx.store.message_map.get(f"decided:{card.decision}")
        if record is None:
            return None
        if card.is_open:
            return await self._settle(card, record["state"], record["outcome"], record=False)
        return card

    async def _winners_outcome(self, card: Card) -> Card | None:
        """The card as the tap that won the claim settled it. The winner writes its outcome
        right after the claim, so a tap that lost by a hair may read before that write:
        it looks again for a moment, rather than tell the person only "already answered"
        (which it still does if the winner died between its claim and that write)."""
        for _ in range(WINNER_READS):
            settled = await self._settled_elsewhere(card)
            if settled is not None:
                return settled
            await asyncio.sleep(WINNER_READ_PAUSE)
        return None

    async def _settle_others(self, card: Card, state: str, outcome: str) -> None:
        """Redraw the other chats' cards of the same question (best effort: one missed
        reads the shared decision on its next tap)."""
        shown = await self.ctx.store.message_map.get(f"decision-cards:{card.decision}") or {}
        for key in shown.get("keys", []):
            other = await self._card(key) if key != card.key else None
            if other is not None and other.is_open:
                await self._settle(other, state, outcome, record=False)

    async def _settle(self, card: Card, state: str, outcome: str, *,
                      record: bool = True) -> Card:
        settled = card.settled(state, outcome)  # type: ignore[arg-type]
        if record:
            await self.ctx.store.message_map.put(
                f"decided:{card.decision}", {"state": state, "outcome": outcome},
                self.ctx.clock())
        await self._save(settled)
        await self._redraw(settled)
        return settled

    async def _redraw(self, card: Card) -> None:
        """The card's post shows its new state. Cards of the same question in other chats
        have records of their own: each reads the shared decision on its next tap, or is
        redrawn by `ended` when the request closes."""
        post = await self.ctx.store.message_map.get(card_post_key(card.key))
        if post is None:
            return  # not posted yet: the outbox draws it from the record as it now stands
        channel = post["channel"]
        adapter = self.ctx.adapters.get(channel)
        lane = Lane.from_key(card.lane)
        binding = self.ctx.bindings.find(channel, post["chat_id"], lane.thread_id)
        if adapter is None or not adapter.capabilities.cards or binding is None:
            return
        # The post's own rendered text (never the card's fields raw: a name or a question
        # is not markup), with the card as it now stands for the adapter to draw.
        out = Outbound(binding=binding, conversation="",
                       sender_label=post.get("sender_label") or card.asker,
                       text=post.get("text") or "", kind=OutboundKind.FINAL, card=card,
                       protocol=post.get("protocol"))
        try:
            await adapter.edit(PlatformRef(post["chat_id"], post["message_id"]), out)
        except Exception as exc:  # the decision stands; a stale card still answers taps
            log.warning("could not redraw the card %s in %s: %s", card.key, channel, exc)

    async def _card(self, key: str) -> Card | None:
        record = await self.ctx.store.message_map.get(card_record_key(key))
        return Card.from_record(record) if record else None

    async def _save(self, card: Card) -> None:
        await self.ctx.store.message_map.put(card_record_key(card.key), card.to_record(),
                                             self.ctx.clock())

    def _forged(self, tap: Tap) -> None:
        where = f"{tap.channel}:{tap.chat_id}"
        if where in self._forged_logged:
            return
        self._forged_logged[where] = None
        if len(self._forged_logged) > FORGED_LOGGED_KEPT:
            del self._forged_logged[next(iter(self._forged_logged))]
        shown = tap.data[:40] if isinstance(tap.data, str) else type(tap.data).__name__
        log.warning("%s: a tap by %s carried button data the bridge did not issue for this "
                    "chat (%r); refused (further ones here are not logged)", where,
                    tap.sender.id, shown)
