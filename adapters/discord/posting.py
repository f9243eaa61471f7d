"""Posting, editing and deleting the messages the core asks for.

A message goes one of three ways, and the store remembers which (`sent:<id>`), so any
instance can edit or delete it later: through the parent channel's bridge webhook under the
bot's name (the usual way); as the bridge's own bot with the bot's name in bold (no Manage
Webhooks, or `display: prefix`); or, for the answer to a slash command, through that
command's interaction while its token lasts — from the token kept in the store, so the
instance that answers need not be the one whose gateway got the command. A part of a bot's
reply is noted before it is posted (`post_journal.py`): an instance dying mid-call does not
make the next one post it again. Posting needs no gateway: the channel comes from a running
shard's cache or over REST (`channels.py`), and calls go through the instance's REST
client. Every call carries the `allowed_mentions` built from its own text. discord.py's
webhook client sleeps through 429s and 5xx answers, so every webhook call is bounded by
`webhook_timeout`; whatever fails becomes a `SendError` for the outbox, which owns waiting
and order. A bot's question with a card (`Outbound.card`) gets its line and buttons
whichever way it goes (`cards.py`); the edit that redraws it once settled removes them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import aiohttp
import discord

from adapters.discord.cards import card_view, with_card
from adapters.discord.channels import ChannelLookup
from adapters.discord.commands import InteractionRecord
from adapters.discord.config import DiscordAccountConfig
from adapters.discord.errors import (
    is_expired_interaction,
    is_gone,
    is_unknown_webhook,
    send_error,
)
from adapters.discord.outbound import allowed_mentions, webhook_username, with_prefix
from adapters.discord.post_journal import PostJournal
from adapters.discord.webhooks import ChannelWebhooks, WebhookChannel
from bridge.core.account_state import AccountState
from bridge.core.adapter import PermanentSendError, TransientSendError
from bridge.core.model import Outbound, PlatformRef

log = logging.getLogger(__name__)

T = TypeVar("T")

DISCORD_ERRORS = (discord.DiscordException, aiohttp.ClientError, OSError)
"""What a discord.py call can fail with (HTTP errors, connection errors)."""

KEEP: Any = discord.utils.MISSING
"""Leave a message's components as they are (a post or an edit of anything but a card)."""


def buttons_of(out: Outbound) -> Any:
    """What a post or edit sends as components: a card's buttons, None (take them away)
    once it is settled, or nothing at all for any other message."""
    if out.card is None:
        return KEEP
    return card_view(out.card)


@dataclass(frozen=True, slots=True)
class Place:
    """Where a message goes, in the core's terms and in Discord's."""

    chat_id: str
    lane_thread: str | None
    """The thread the core's lane names (it goes back into `PlatformRef`)."""
    parent: WebhookChannel | None
    """The channel whose webhook posts here (None: not a channel webhooks can post in)."""
    thread: int | None
    """The Discord thread to post in, if any."""

    @property
    def post_id(self) -> int:
        return self.thread or int(self.chat_id)

    def ref(self, message_id: int) -> PlatformRef:
        return PlatformRef(self.chat_id, str(message_id), self.lane_thread)


class Poster:
    """The adapter's outbound half: the account's REST client, no gateway needed."""

    def __init__(
        self,
        channel: str,
        client: discord.Client,
        channels: ChannelLookup,
        config: DiscordAccountConfig,
        state: AccountState,
        webhooks: ChannelWebhooks,
        session: aiohttp.ClientSession,
    ) -> None:
        self.channel = channel
        self.client = client
        self.channels = channels
        self.config = config
        self.state = state
        self.webhooks = webhooks
        self.session = session
        self.journal = PostJournal(state)

    async def place(self, chat_id: str, thread_id: str | None) -> Place:
        if not chat_id.isdigit():
            raise PermanentSendError(f"{self.channel}: {chat_id!r} is not a Discord channel id")
        found = await self._channel(self.channels.get(int(chat_id)))
        thread = int(thread_id) if thread_id and thread_id.isdigit() else None
        parent: object = found
        if isinstance(found, discord.Thread):  # a thread bound as a chat of its own
            thread, parent = found.id, await self._channel(self.channels.parent_of(found))
        hook_channel = parent if isinstance(parent, WebhookChannel) else None
        return Place(chat_id, thread_id, hook_channel, thread)

    async def _channel(self, lookup: Awaitable[object]) -> object:
        """None for a channel Discord will not show the bot (posting as the bot then says
        why); a network failure is for the outbox to retry."""
        try:
            return await lookup
        except (discord.NotFound, discord.Forbidden):
            return None
        except DISCORD_ERRORS as exc:
            raise send_error(exc, "look up the channel") from exc

    # -- posting -----------------------------------------------------------------------

    async def send(self, out: Outbound) -> PlatformRef:
        place = await self.place(out.binding.chat, out.thread_id or out.binding.thread)
        mentions = allowed_mentions(out.text, out.binding)
        reply_to = out.reply_to
        if reply_to and (record := await self._interaction(reply_to)) is not None:
            answered = await self._answer_interaction(record, out, place, mentions)
            if answered is not None:
                return answered
            reply_to = None  # an interaction id is no message to reply to
        key = self.journal.key(out)
        if key is not None and (landed := await self._landed(key, place, out)) is not None:
            return place.ref(landed)
        posted = None
        if out.binding.display != "prefix" and place.parent is not None:
            posted = await self._post_by_webhook(place, out, mentions)
        if posted is None:
            posted = await self._post_as_bot(place, out, mentions, reply_to)
        if key is not None:
            await self.journal.posted(key, int(posted.message_id))
        return posted

    async def _landed(self, key: str, place: Place, out: Outbound) -> int | None:
        """A previous attempt's post of this part, if it reached Discord (see post_journal)."""
        texts = {with_card(out.text, out.card),
                 with_card(with_prefix(out.sender_label, out.text), out.card)}

        async def is_ours(message: discord.Message) -> bool:
            if message.content not in texts:
                return False
            if message.author.id == self.webhooks.bot_id:
                return True
            return message.webhook_id is not None and await self.webhooks.is_own(
                message.webhook_id)

        try:
            landed = await self.journal.landed(
                key, self.client.get_partial_messageable(place.post_id), is_ours)
        except DISCORD_ERRORS as exc:
            raise send_error(exc, "look for an earlier attempt's post") from exc
        if landed is not None:
            log.info("%s: part %d of a reply by %s was posted before (message %s); not "
                     "posting it again", self.channel, out.part, out.sender_label, landed)
        return landed

    async def _webhook(self, place: Place) -> discord.Webhook | None:
        assert place.parent is not None
        try:
            return await self.webhooks.for_channel(place.parent)
        except DISCORD_ERRORS as exc:
            raise send_error(exc, "find the channel's webhook") from exc

    async def _in_time(self, call: Awaitable[T], action: str) -> T:
        """A webhook call, bounded: discord.py's webhook client sleeps through 429s and 5xx."""
        try:
            async with asyncio.timeout(self.config.webhook_timeout):
                return await call
        except TimeoutError:
            raise TransientSendError(
                f"{self.channel} {action}: no answer within webhook_timeout "
                f"({self.config.webhook_timeout:g}s)"
            ) from None

    async def _post_by_webhook(
        self, place: Place, out: Outbound, mentions: discord.AllowedMentions
    ) -> PlatformRef | None:
        """Post under the bot's name; None when this channel has no webhook for the bridge."""
        assert place.parent is not None
        for attempt in (1, 2):
            hook = await self._webhook(place)
            if hook is None:
                return None
            try:
                message = await self._in_time(hook.send(
                    with_card(out.text, out.card),
                    username=webhook_username(out.sender_label),
                    avatar_url=self.config.avatar_for(out.sender_label) or discord.utils.MISSING,
                    allowed_mentions=mentions,
                    thread=discord.Object(place.thread) if place.thread else discord.utils.MISSING,
                    view=buttons_of(out) or KEEP,
                    wait=True,
                ), "execute webhook")
            except DISCORD_ERRORS as exc:
                if attempt == 1 and is_unknown_webhook(exc):
                    log.info("%s: the webhook of #%s was deleted; making a new one",
                             self.channel, place.parent.name)
                    self.webhooks.forget(place.parent.id)
                    continue
                raise send_error(exc, "execute webhook") from exc
            # The thread too: the core's redraw of a card names only the chat.
            await self.state.put(f"sent:{message.id}", {
                "via": "webhook", "webhook": str(hook.id),
                **({"thread": str(place.thread)} if place.thread else {}),
            })
            return place.ref(message.id)
        return None

    async def _post_as_bot(
        self, place: Place, out: Outbound, mentions: discord.AllowedMentions,
        reply_to: str | None,
    ) -> PlatformRef:
        target = self.client.get_partial_messageable(place.post_id)
        reference = (
            discord.MessageReference(message_id=int(reply_to), channel_id=target.id,
                                     fail_if_not_exists=False)
            if reply_to and reply_to.isdigit() else None
        )
        try:
            message = await target.send(
                with_card(with_prefix(out.sender_label, out.text), out.card),
                allowed_mentions=mentions, view=buttons_of(out) or KEEP,
                reference=reference,  # type: ignore[arg-type]
            )
        except DISCORD_ERRORS as exc:
            raise send_error(exc, "send message") from exc
        await self.state.put(f"sent:{message.id}", {"via": "bot", "channel": str(target.id)})
        return place.ref(message.id)

    async def _answer_interaction(
        self, record: InteractionRecord, out: Outbound, place: Place,
        mentions: discord.AllowedMentions,
    ) -> PlatformRef | None:
        """Answer a slash command through its interaction; None: answer in the channel."""
        if not record.usable(datetime.now(UTC)):
            return None
        try:
            message = await self._in_time(record.webhook(self.session).send(
                with_card(out.text, out.card), ephemeral=record.ephemeral,
                allowed_mentions=mentions, view=buttons_of(out) or KEEP, wait=True,
            ), "answer a slash command")
        except DISCORD_ERRORS as exc:
            if is_expired_interaction(exc):
                log.info("%s: a slash command can no longer be answered directly; answering "
                         "in the channel", self.channel)
                return None
            raise send_error(exc, "answer a slash command") from exc
        await self.state.put(f"sent:{message.id}", {"via": "interaction", "interaction": record.id})
        return place.ref(message.id)

    async def _interaction(self, interaction_id: str) -> InteractionRecord | None:
        found = await self.state.get(f"interaction:{interaction_id}")
        return InteractionRecord.from_record(found) if found else None

    # -- changing what was posted ------------------------------------------------------

    async def edit(self, ref: PlatformRef, out: Outbound) -> None:
        mentions = allowed_mentions(out.text, out.binding)
        view = buttons_of(out)
        await self._change(
            ref, "edit message",
            as_bot=lambda message: message.edit(
                content=with_card(with_prefix(out.sender_label, out.text), out.card),
                allowed_mentions=mentions, view=view,
            ),
            by_webhook=lambda hook, message_id, thread: hook.edit_message(
                message_id, content=with_card(out.text, out.card), allowed_mentions=mentions,
                thread=thread, view=view,
            ),
        )

    async def delete(self, ref: PlatformRef) -> None:
        """A message already gone counts as deleted."""
        try:
            await self._change(
                ref, "delete message",
                as_bot=lambda message: message.delete(),
                by_webhook=lambda hook, message_id, thread: hook.delete_message(
                    message_id, thread=thread
                ),
            )
        except PermanentSendError as exc:
            if not isinstance(exc.__cause__, discord.HTTPException) or not is_gone(exc.__cause__):
                raise

    async def _change(
        self,
        ref: PlatformRef,
        action: str,
        *,
        as_bot: Callable[[discord.PartialMessage], Awaitable[Any]],
        by_webhook: Callable[[discord.Webhook, int, Any], Awaitable[Any]],
    ) -> None:
        """Edit or delete a message the way it was posted."""
        place = await self.place(ref.chat_id, ref.thread_id)
        message_id = int(ref.message_id)
        sent = await self.state.get(f"sent:{ref.message_id}") or {}
        try:
            if sent.get("via") == "bot":
                target = self.client.get_partial_messageable(
                    int(sent.get("channel") or place.post_id)
                )
                await as_bot(target.get_partial_message(message_id))
                return
            hook, thread = await self._posted_through(sent, place)
            await self._in_time(by_webhook(hook, message_id, thread), action)
        except DISCORD_ERRORS as exc:
            raise send_error(exc, action) from exc

    async def _posted_through(
        self, sent: dict[str, Any], place: Place
    ) -> tuple[discord.Webhook, Any]:
        """The webhook a message was posted by (the channel's, or an interaction's)."""
        thread_id = place.thread or int(sent.get("thread") or 0)
        thread = discord.Object(thread_id) if thread_id else discord.utils.MISSING
        if sent.get("via") == "interaction":
            record = await self._interaction(str(sent.get("interaction")))
            if record is None or not record.usable(datetime.now(UTC)):
                raise PermanentSendError(
                    f"{self.channel}: a slash command's answer can no longer be changed"
                )
            return record.webhook(self.session), discord.utils.MISSING
        hook = await self._webhook(place) if place.parent is not None else None
        if hook is None or (sent.get("webhook") and sent["webhook"] != str(hook.id)):
            raise PermanentSendError(
                f"{self.channel}: the message was posted by a webhook that no longer exists"
            )
        return hook, thread

    async def typing(self, chat_id: str, thread_id: str | None) -> None:
        place = await self.place(chat_id, thread_id)
        await self.client.get_partial_messageable(place.post_id).typing()
