"""Telegram updates → the core's `Inbound`.

Pure functions over python-telegram-bot objects: no network, no state. The adapter decides
which updates to look at (own echoes, other bots' commands); this module only translates.
Files travel as Telegram `file_id`s: a Telegram file URL embeds the bot token.
"""

from __future__ import annotations

from dataclasses import dataclass

from telegram import Chat, Message, MessageEntity, Update, User

from adapters.telegram.commands import address_command
from bridge.core.model import Attachment, Inbound, Sender
from bridge.text import from_platform

CHANNEL_TYPE = "telegram"


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """The message an update carries and whether it is an edit of an earlier one."""

    message: Message
    is_edit: bool


def chat_message(update: Update) -> ChatMessage | None:
    """The (possibly edited) message of an update; None for updates that are not messages."""
    if update.message is not None:
        return ChatMessage(update.message, False)
    if update.channel_post is not None:
        return ChatMessage(update.channel_post, False)
    if update.edited_message is not None:
        return ChatMessage(update.edited_message, True)
    if update.edited_channel_post is not None:
        return ChatMessage(update.edited_channel_post, True)
    return None


def display_name(user: User) -> str:
    """First and last name as people see them; the @username when there is no name."""
    name = (user.full_name or "").strip()
    if name:
        return name
    return f"@{user.username}" if user.username else str(user.id)


def chat_title(chat: Chat) -> str:
    """A name for logs: the group title, or the person's name in a private chat."""
    if chat.title:
        return chat.title
    name = " ".join(part for part in (chat.first_name, chat.last_name) if part)
    return name or (f"@{chat.username}" if chat.username else "")


def sender_of(message: Message) -> Sender:
    """The author; anonymous group admins and channels post as a chat, not a user."""
    if message.sender_chat is not None:
        chat = message.sender_chat
        return Sender(id=str(chat.id), name=chat_title(chat) or str(chat.id), is_bot=False)
    user = message.from_user
    if user is None:
        return Sender(id=str(message.chat.id), name=chat_title(message.chat), is_bot=False)
    return Sender(id=str(user.id), name=display_name(user), is_bot=user.is_bot)


def thread_of(message: Message) -> str | None:
    """Forum topics are threads. Plain supergroup replies also carry a thread id; ignore it."""
    if message.is_topic_message and message.message_thread_id is not None:
        return str(message.message_thread_id)
    return None


def reply_target(message: Message) -> str | None:
    """The message this one answers; in a topic, the topic's root is no reply target."""
    replied = message.reply_to_message
    if replied is None:
        return None
    if message.is_topic_message and replied.message_id == message.message_thread_id:
        return None
    return str(replied.message_id)


def mentioned_names(message: Message) -> tuple[str, ...]:
    """`@username` mentions by username, text mentions (users without one) by name."""
    names: list[str] = []
    found = message.parse_entities([MessageEntity.MENTION, MessageEntity.TEXT_MENTION])
    found.update(
        message.parse_caption_entities([MessageEntity.MENTION, MessageEntity.TEXT_MENTION])
    )
    for entity, text in found.items():
        if entity.type == MessageEntity.TEXT_MENTION and entity.user is not None:
            names.append(display_name(entity.user))
        else:
            names.append(text.lstrip("@"))
    return tuple(dict.fromkeys(name for name in names if name))


def attachments_of(message: Message) -> tuple[Attachment, ...]:
    """Photos, documents and other media as `file_id`s (never URLs: they hold the token)."""
    found: list[Attachment] = []
    if message.photo:
        largest = message.photo[-1]
        found.append(
            Attachment(
                type="image", mime="image/jpeg", size=largest.file_size, file_id=largest.file_id
            )
        )
    if message.document is not None:
        doc = message.document
        found.append(
            Attachment(
                type="file",
                name=doc.file_name,
                mime=doc.mime_type,
                size=doc.file_size,
                file_id=doc.file_id,
            )
        )
    for kind in ("video", "audio", "voice", "animation"):
        media = getattr(message, kind)
        if media is not None and message.document is None:
            found.append(
                Attachment(
                    type=kind,
                    name=getattr(media, "file_name", None),
                    mime=getattr(media, "mime_type", None),
                    size=media.file_size,
                    file_id=media.file_id,
                )
            )
    return tuple(found)


def to_inbound(update: Update, *, account: str, bot_username: str) -> Inbound | None:
    """Normalize one update; None when it carries nothing for the core.

    That is: no message, a service message (members joining or leaving, a pin, a new
    forum topic: no text, no caption, no file), or a command addressed to another bot
    (`/ask@OtherBot`).
    """
    found = chat_message(update)
    if found is None:
        return None
    message = found.message
    raw_text = message.text if message.text is not None else (message.caption or "")
    raw_entities = message.entities if message.text is not None else message.caption_entities
    attachments = attachments_of(message)
    if not raw_text and not attachments:
        return None
    addressed = address_command(
        raw_text, [entity.to_dict() for entity in raw_entities], bot_username
    )
    if addressed is None:
        return None
    timestamp = (message.edit_date if found.is_edit else None) or message.date
    return Inbound(
        channel_type=CHANNEL_TYPE,
        account=account,
        chat_id=str(message.chat.id),
        message_id=str(message.message_id),
        sender=sender_of(message),
        text=from_platform(addressed.text, "telegram", entities=addressed.entities),
        thread_id=thread_of(message),
        mentions=mentioned_names(message),
        reply_to=reply_target(message),
        attachments=attachments,
        timestamp=timestamp,
        is_edit=found.is_edit,
        raw=update.to_dict(),
    )
