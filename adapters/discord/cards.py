"""A bot's question as Discord draws it (a message with buttons), and a press on one.

Out: the message keeps the text the core rendered and gains one line — who asks, the
depth, when the question closes (`<t:…:R>`, which every Discord client shows as a live
"in 9 minutes") — and action rows of buttons: the options (5 to a row), then "Answer in my
own words" and Stop. Each button's `custom_id` is the core's button data as it is (at most
25 characters, inside Discord's 100). Once the card is settled an edit swaps the line for
the outcome and sends no components, which takes the buttons away.

The buttons go on the bridge's webhook posts. Discord lets a webhook carry interactive
components only when an application owns it; the bridge's webhooks are created by its bot
(`webhooks.py`), so its application owns them and the presses come to its gateway like any
other interaction. Without a webhook (`display: prefix`, no Manage Webhooks) the card is
posted by the bot itself, with the same buttons.

In: presses arrive as INTERACTION_CREATE on whichever shard's gateway has the server —
possibly another instance than the one that posted, or after a restart — so nothing here
keeps a discord.py view per message: the adapter's `on_interaction` listener takes every
interaction whose `custom_id` starts with `bcn:` and hands it to the core as a `Tap`, with
the person and their roles from the interaction itself (Discord signs it), never from the
data. Discord wants an answer within 3 seconds: the core usually settles a tap well within
that and the person gets its reply as an ephemeral message; if it takes longer the
interaction is deferred ("thinking…", privately) and the reply follows. "Answer in my own
words" must open its modal as the interaction's first answer, so the core is asked first
only for a moment (is this person allowed, is it still open?) and the modal opens when it
says so or does not say in time; the modal's submit is checked again in full.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import aiohttp
import discord

from adapters.discord.inbound import CHANNEL_TYPE, Location, sender_of
from adapters.discord.outbound import DISCORD_MAX_TEXT
from bridge.background import Background
from bridge.core.adapter import TapSink
from bridge.core.cards import OWN_WORDS, Card, read_button_data
from bridge.core.taps import Tap, TapReply
from bridge.text import Document, Paragraph, Text, render

log = logging.getLogger(__name__)

PREFIX = "bcn:"
"""What every button the bridge issues starts with (`bridge.core.cards.button_data`)."""
MAX_ROWS, PER_ROW = 5, 5
"""Discord's limits: action rows per message, buttons per row."""
MAX_LABEL = 80
MAX_CUSTOM_ID = 100

ANSWER_WITHIN = 2.0
"""Seconds to wait for the core's reply before deferring (Discord allows 3 in all, counted
from when it sent the interaction)."""
OWN_WORDS_CHECK = 1.5
"""Seconds the own-words button waits for the core's check before opening the modal."""

ANSWER_INPUT = "answer"
"""The `custom_id` of the modal's text input."""
MODAL_TITLE = "Answer in your own words"
MAX_ANSWER = 1000
TRY_AGAIN = "That answer could not be taken just now; please try again."

RESPOND_ERRORS = (discord.DiscordException, aiohttp.ClientError, OSError)
"""What answering an interaction can fail with (as `posting.DISCORD_ERRORS`, which imports
this module)."""

_SETTLED_MARK = {"answered": "✅", "expired": "⌛", "closed": "⏹"}


# -- out -----------------------------------------------------------------------------------

class CardView(discord.ui.View):
    """A card's buttons as discord.py sends them, and nothing more.

    Not dispatchable on purpose: presses are answered by the adapter's listener by
    `custom_id` on whichever client receives them (see the module doc), so no client should
    store this view — and a partial webhook, with no client behind it, refuses to send a
    view that would need one.
    """

    def __init__(self, card: Card) -> None:
        super().__init__(timeout=None)
        *options, own, stop = card.buttons()
        for index, (label, data) in enumerate(options[: (MAX_ROWS - 1) * PER_ROW]):
            self.add_item(_button(label, data, discord.ButtonStyle.primary, index // PER_ROW))
        last = min(MAX_ROWS - 1, (len(options) + PER_ROW - 1) // PER_ROW)
        self.add_item(_button(own[0], own[1], discord.ButtonStyle.secondary, last))
        self.add_item(_button(stop[0], stop[1], discord.ButtonStyle.danger, last))

    def is_dispatchable(self) -> bool:
        return False


def _button(label: str, data: str, style: discord.ButtonStyle, row: int) -> discord.ui.Button[Any]:
    if len(data) > MAX_CUSTOM_ID:  # the core never issues one; say so loudly
        raise ValueError(f"button data over Discord's {MAX_CUSTOM_ID} characters: {data!r}")
    shown = label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1].rstrip() + "…"
    return discord.ui.Button(label=shown, custom_id=data, style=style, row=row)


def card_view(card: Card) -> CardView | None:
    """The buttons of an open card; None once settled (an edit then removes them all)."""
    return CardView(card) if card.is_open and card.buttons() else None


def escaped(text: str) -> str:
    """`text` as literal Discord markdown (a name or a request id is never markup)."""
    return render(Document((Paragraph((Text(text),)),)), "discord")


def facts_line(card: Card) -> str:
    """One line under an open card: who asks, the depth, when it closes (a timestamp every
    client counts down by itself), and the request id a typed answer names."""
    facts = [escaped(f"❓ {card.asker} asks"), f"depth {card.depth[0]}/{card.depth[1]}"]
    if card.deadline is not None:
        facts.append(f"closes <t:{int(card.deadline.timestamp())}:R>")
    facts.append(escaped(f"request {card.request_id}"))
    return " · ".join(facts)


def outcome_line(card: Card) -> str:
    """One line under a settled card: what settled it."""
    mark = _SETTLED_MARK.get(card.state, "•")
    return escaped(f"{mark} {card.outcome or f'This question has {card.state}.'}")


def with_card(content: str, card: Card | None, room: int = DISCORD_MAX_TEXT) -> str:
    """The message content for `card`: the content as posted and its line of facts or
    outcome, left out when it would not fit (the core filled the part to its limit, and the
    buttons say enough by themselves). Depends on the card only, never on the time, so a
    retry finds its earlier post by its content."""
    if card is None:
        return content
    combined = f"{content}\n\n{facts_line(card) if card.is_open else outcome_line(card)}"
    return combined if len(combined) <= room else content


# -- in ------------------------------------------------------------------------------------

Locate = Callable[[object, int], Awaitable[Location]]


def is_card_interaction(interaction: discord.Interaction) -> bool:
    """A press on one of the bridge's buttons, or the submit of its own-words modal."""
    if interaction.type not in (discord.InteractionType.component,
                                discord.InteractionType.modal_submit):
        return False
    custom_id = (interaction.data or {}).get("custom_id")
    return isinstance(custom_id, str) and custom_id.startswith(PREFIX)


def submitted_text(data: object) -> str:
    """The own-words input's value from a modal submit's raw data (nested in action rows or
    labels, as the modal nested it); empty when it is not there."""
    if isinstance(data, dict):
        if data.get("custom_id") == ANSWER_INPUT and isinstance(data.get("value"), str):
            return data["value"]
        children = [*(data.get("components") or []), data.get("component")]
        for child in children:
            if (found := submitted_text(child)):
                return found
    if isinstance(data, list):
        for child in data:
            if (found := submitted_text(child)):
                return found
    return ""


class CardTaps:
    """Turns presses and modal submits into the core's taps, and answers each in time."""

    def __init__(self, account: str, taps: Callable[[], TapSink | None], locate: Locate,
                 background: Background) -> None:  # fmt: skip
        self.account = account
        self.taps = taps
        """The core's tap sink as it is now (set by the relay, None before)."""
        self.locate = locate
        self.background = background

    async def handle(self, interaction: discord.Interaction) -> None:
        """Answer one interaction; never raises (a press is a person, not a crash)."""
        try:
            custom_id = str((interaction.data or {}).get("custom_id"))
            if interaction.type is discord.InteractionType.modal_submit:
                text = submitted_text((interaction.data or {}).get("components"))
                tap = await self._tap(interaction, custom_id, text)
                await self._answer(interaction, self._settle(tap), ANSWER_WITHIN)
                return
            tap = await self._tap(interaction, custom_id)
            read = read_button_data(custom_id)
            if read is not None and read[1] == OWN_WORDS:
                await self._answer(interaction, self._settle(tap), OWN_WORDS_CHECK, own=True)
            else:
                await self._answer(interaction, self._settle(tap), ANSWER_WITHIN)
        except Exception:
            log.warning("discord:%s could not handle a press on a card", self.account,
                        exc_info=True)

    async def _tap(self, interaction: discord.Interaction, data: str,
                   text: str | None = None) -> Tap:  # fmt: skip
        """The press as the core's `Tap`: who from the interaction's signed user, where from
        its channel (a thread of a bound channel is that chat's thread)."""
        user = interaction.user
        location = await self.locate(interaction.channel, interaction.channel_id or 0)
        roles: tuple[str, ...] = ()
        if isinstance(user, discord.Member):
            roles = tuple(str(role.id) for role in user.roles if not role.is_default())
        return Tap(channel_type=CHANNEL_TYPE, account=self.account, chat_id=location.chat_id,
                   sender=sender_of(user), data=data, roles=roles,
                   thread_id=location.thread_id, text=text, tap_id=str(interaction.id))

    def _settle(self, tap: Tap) -> asyncio.Task[TapReply]:
        """The core settles the tap in a task of its own: it finishes even when the answer
        to Discord has to be deferred, or the modal opened without waiting for it."""
        return self.background.spawn(self._ask_core(tap), name=f"discord:{self.account} tap")

    async def _ask_core(self, tap: Tap) -> TapReply:
        sink = self.taps()
        if sink is None:
            return TapReply("The bridge is not ready to take answers yet; please try again.")
        try:
            return await sink(tap)
        except Exception:
            log.warning("discord:%s: the core could not settle a tap on a card", self.account,
                        exc_info=True)
            return TapReply(TRY_AGAIN)

    async def _answer(self, interaction: discord.Interaction, settle: asyncio.Task[TapReply],
                      within: float, *, own: bool = False) -> None:  # fmt: skip
        """Reply within Discord's time: the core's answer if it comes in time, else a
        deferral and the answer as a followup (or, for own words, the modal at once)."""
        try:
            async with asyncio.timeout(within):
                reply = await asyncio.shield(settle)
        except TimeoutError:
            if own:
                await self._respond(interaction.response.send_modal(own_words_modal(
                    str((interaction.data or {}).get("custom_id")), None)), "open a modal")
                return
            if not await self._respond(
                interaction.response.defer(ephemeral=True, thinking=True), "defer"):
                return
            reply = await settle
            await self._respond(interaction.followup.send(reply.text, ephemeral=True),
                                "follow up")
            return
        if own and reply.wants_own_words:
            custom_id = str((interaction.data or {}).get("custom_id"))
            await self._respond(interaction.response.send_modal(
                own_words_modal(custom_id, reply.card)), "open a modal")
            return
        await self._respond(interaction.response.send_message(reply.text, ephemeral=True),
                            "answer")

    async def _respond(self, call: Coroutine[Any, Any, object], action: str) -> bool:
        """One call answering the interaction; a failure (it expired, Discord is down) is
        logged: the tap itself stands, and the card's redraw shows its outcome."""
        try:
            await call
        except RESPOND_ERRORS as exc:
            log.warning("discord:%s could not %s a press on a card: %s", self.account, action,
                        exc)
            return False
        return True


def own_words_modal(custom_id: str, card: Card | None) -> discord.ui.Modal:
    """The form for an answer in one's own words. Its `custom_id` is the button's data, so
    the submit names the card by itself; it is stopped before it is sent so that discord.py
    does not keep it waiting in this client (the listener answers the submit, on whichever
    instance it arrives)."""
    modal = discord.ui.Modal(title=MODAL_TITLE, custom_id=custom_id, timeout=None)
    question = card.question if card is not None else ""
    modal.add_item(discord.ui.TextInput(
        label="Your answer", custom_id=ANSWER_INPUT, style=discord.TextStyle.paragraph,
        max_length=MAX_ANSWER,
        placeholder=(question[:99] + "…" if len(question) > 100 else question) or None,
    ))
    modal.stop()
    return modal

