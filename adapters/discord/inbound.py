"""Discord messages → the core's `Inbound`.

Pure functions over discord.py objects: no network, no state. The adapter decides which
messages to look at (own echoes, system messages, channels it must fetch first); this module
only translates. Where a message sits matters most: a thread or forum post of a bound channel
is a thread (`thread_id`) of that channel's chat, so the binding's `session_scope` decides
whether it gets a BCN session of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import discord

from bridge.core.model import Attachment, Inbound, Sender
from bridge.text import from_platform

CHANNEL_TYPE = "discord"

RELAYED_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})
"""What people write; joins, pins, thread-created notices and the like are not relayed."""

_ATTACHMENT_KINDS = {"image": "image", "video": "video", "audio": "audio"}


@dataclass(frozen=True, slots=True)
class Location:
    """Where a message belongs for the core: the chat (a bound channel) and its thread."""

    chat_id: str
    thread_id: str | None
    channel_id: int
    """The Discord channel the message is in (the thread itself when in a thread)."""


def location_of(channel: object, channel_id: int, bound_chats: frozenset[str]) -> Location:
    """A thread of a bound channel is a thread of that chat; a thread bound as the chat
    itself (`chat: "<thread id>"`) is a chat of its own."""
    if isinstance(channel, discord.Thread) and str(channel.id) not in bound_chats:
        return Location(str(channel.parent_id), str(channel.id), channel.id)
    return Location(str(channel_id), None, channel_id)


class ResolvedMentions:
    """The names behind one message's `<@id>`, `<@&role>` and `<#channel>`, from the data
    Discord sent with it. A `bridge.text.Directory` keyed by id: two people may share a name."""

    def __init__(self, names_by_id: dict[str, str]) -> None:
        self._names = names_by_id
        self._ids = {name.casefold(): pid for pid, name in names_by_id.items()}

    @classmethod
    def of(cls, message: discord.Message) -> ResolvedMentions:
        names: dict[str, str] = {}
        for user in message.mentions:
            names[str(user.id)] = user.display_name
        for role in message.role_mentions:
            names[str(role.id)] = role.name
        for channel in message.channel_mentions:
            names[str(channel.id)] = channel.name
        return cls(names)

    def id_for(self, name: str) -> str | None:
        return self._ids.get(name.lstrip("@#").casefold())

    def name_for(self, platform_id: str) -> str | None:
        return self._names.get(platform_id)


def sender_of(author: discord.User | discord.Member, *, webhook: bool = False) -> Sender:
    """Server nickname > global name > username (discord.py's `display_name` order).

    A webhook post is a bot's (another bridge, an integration) whatever its author says.
    """
    return Sender(id=str(author.id), name=author.display_name, is_bot=author.bot or webhook)


def reply_target(message: discord.Message) -> str | None:
    reference = message.reference
    if message.type is not discord.MessageType.reply or reference is None:
        return None
    return str(reference.message_id) if reference.message_id else None


def attachments_of(message: discord.Message) -> tuple[Attachment, ...]:
    """Files by their CDN URL: signed by Discord, with no bot token in it."""
    return tuple(
        Attachment(
            type=_ATTACHMENT_KINDS.get((file.content_type or "").partition("/")[0], "file"),
            url=file.url,
            name=file.filename,
            mime=file.content_type,
            size=file.size,
        )
        for file in message.attachments
    )


def mentioned_names(message: discord.Message) -> tuple[str, ...]:
    return tuple(dict.fromkeys(user.display_name for user in message.mentions))


def to_inbound(
    message: discord.Message, *, account: str, location: Location, is_edit: bool = False
) -> Inbound | None:
    """Normalize one message; None when it carries nothing for the core (a system message,
    or no text and no file: a sticker, an embed-only post)."""
    if message.type not in RELAYED_TYPES:
        return None
    attachments = attachments_of(message)
    if not message.content and not attachments:
        return None
    timestamp: datetime = (message.edited_at if is_edit else None) or message.created_at
    return Inbound(
        channel_type=CHANNEL_TYPE,
        account=account,
        chat_id=location.chat_id,
        thread_id=location.thread_id,
        message_id=str(message.id),
        sender=sender_of(message.author, webhook=message.webhook_id is not None),
        text=from_platform(message.content, "discord", directory=ResolvedMentions.of(message)),
        mentions=mentioned_names(message),
        reply_to=reply_target(message),
        attachments=attachments,
        timestamp=timestamp,
        is_edit=is_edit,
        raw={"id": str(message.id), "channel_id": str(message.channel.id),
             "guild_id": str(message.guild.id) if message.guild else None},
    )


def deleted_inbound(
    message_id: int, sender: Sender, text: str, *, account: str, location: Location,
    timestamp: datetime,
) -> Inbound:
    """A human's message was deleted: the bots are told what it said, when that is known."""
    return Inbound(
        channel_type=CHANNEL_TYPE,
        account=account,
        chat_id=location.chat_id,
        thread_id=location.thread_id,
        message_id=str(message_id),
        sender=sender,
        text=text,
        timestamp=timestamp,
        is_delete=True,
    )
