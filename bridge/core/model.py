"""The normalized messages that cross the boundary between an adapter and the core.

`Inbound` and `Outbound` are the only things adapters and the core exchange: an adapter
turns platform events into `Inbound`s and `Outbound`s into platform API calls, and nothing
else.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from bridge.core.binding import Binding
from bridge.core.cards import Card
from bridge.text.unicode import valid_unicode


@dataclass(frozen=True, slots=True)
class Sender:
    """Who wrote a platform message, in the platform's own terms."""

    id: str
    name: str
    is_bot: bool = False


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file on a message. `url` must never embed a platform secret (e.g. a bot token)."""

    type: str
    url: str | None = None
    name: str | None = None
    mime: str | None = None
    size: int | None = None
    file_id: str | None = None
    """The platform's own handle for the file, for platforms whose URLs embed secrets."""


@dataclass(slots=True)
class Inbound:
    """One platform message, normalized.

    `text` is common Markdown with platform mentions already turned into `@Name`.
    `mentions` lists the names the platform resolved (so the hub need not re-parse them).

    Every platform's text enters the core here, so this is its one door to valid Unicode
    (docs/text.md, "Valid Unicode"): a lone surrogate in any text field — a Slack event or
    a Telegram update parsed by its own library, a Discord name — becomes U+FFFD as the
    message is made, and nothing downstream (the link's frames, the stores, the logs) meets
    one. `raw` is the platform's own object and is left as it is: it never leaves the adapter.
    """

    channel_type: str
    account: str
    chat_id: str
    message_id: str
    sender: Sender
    text: str
    thread_id: str | None = None
    mentions: tuple[str, ...] = ()
    reply_to: str | None = None
    attachments: tuple[Attachment, ...] = ()
    timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))
    is_edit: bool = False
    is_delete: bool = False
    """The message was deleted; `text` is what it said when the platform still knows."""
    raw: Any = None

    def __post_init__(self) -> None:
        self.account = valid_unicode(self.account)
        self.chat_id = valid_unicode(self.chat_id)
        self.message_id = valid_unicode(self.message_id)
        self.text = valid_unicode(self.text)
        if self.thread_id is not None:
            self.thread_id = valid_unicode(self.thread_id)
        if self.reply_to is not None:
            self.reply_to = valid_unicode(self.reply_to)
        self.sender = _valid_sender(self.sender)
        self.mentions = tuple(valid_unicode(name) for name in self.mentions)
        if self.attachments:
            self.attachments = tuple(_valid_attachment(a) for a in self.attachments)

    @property
    def channel(self) -> str:
        """The binding key `"<type>:<account>"` this message arrived on."""
        return f"{self.channel_type}:{self.account}"


def _valid_sender(sender: Sender) -> Sender:
    sender_id, name = valid_unicode(sender.id), valid_unicode(sender.name)
    if sender_id is sender.id and name is sender.name:
        return sender
    return replace(sender, id=sender_id, name=name)


def _valid_attachment(attachment: Attachment) -> Attachment:
    changed = {key: valid for key in ("type", "url", "name", "mime", "file_id")
               if isinstance(value := getattr(attachment, key), str)
               and (valid := valid_unicode(value)) is not value}
    return replace(attachment, **changed) if changed else attachment


class OutboundKind(StrEnum):
    DELTA = "delta"
    FINAL = "final"
    SYSTEM = "system"


@dataclass(frozen=True, slots=True)
class PlatformRef:
    """Where a sent message landed, so the core can edit it later."""

    chat_id: str
    message_id: str
    thread_id: str | None = None


@dataclass(slots=True)
class Outbound:
    """What the core asks an adapter to show.

    `text` is already rendered in the adapter's dialect and within its length limit; a
    reply split into several platform messages is several `Outbound`s with `part`/`parts`
    sharing one `run_id`, so the outbox can map all of them back to one logical reply.
    """

    binding: Binding
    conversation: str
    sender_label: str
    text: str
    kind: OutboundKind = OutboundKind.FINAL
    thread_id: str | None = None
    """The thread/topic to post in (the binding's own, or the one the message came from)."""
    run_id: str | None = None
    reply_to: str | None = None
    edit_of: PlatformRef | None = None
    part: int = 1
    parts: int = 1
    protocol: dict[str, Any] | None = None
    """`ProtocolMessage.to_dict()` when the text carries a protocol block (cards, badges)."""
    from_human: bool = False
    """Shown on a person's behalf (their `/ask` as a protocol card), not a bot's message."""
    card: Card | None = None
    """A bot's question to draw as a card with buttons (only for `Capabilities.cards`, on
    the last part of the output); `text` still says it all for a plain rendering."""
