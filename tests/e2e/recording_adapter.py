"""An in-test chat platform for relay tests: records what the core posts, can be taken down.

It implements the core's `Adapter` interface directly (it is the relay's real counterpart in
these tests, not a mock of any platform library); platform adapters are tested against their
own fake servers elsewhere.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from bridge.core.adapter import Adapter, Capabilities, TransientSendError
from bridge.core.cards import Card
from bridge.core.model import Inbound, Outbound, PlatformRef, Sender
from bridge.core.taps import Tap, TapReply

_ids = itertools.count(1)


class RecordingAccount(BaseModel):
    model_config = ConfigDict(extra="forbid")
    can_edit: bool = True


@dataclass
class Posted:
    """One platform message as the chat shows it now (edits replace `text`)."""

    ref: PlatformRef
    sender: str
    text: str
    kind: str
    run_id: str | None
    protocol: dict | None
    edits: int = 0
    reply_to: str | None = None
    card: Card | None = None
    """The question card drawn with this message, as it now stands (edits redraw it)."""


@dataclass
class Chat:
    messages: list[Posted] = field(default_factory=list)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)


class RecordingAdapter(Adapter):
    channel_type: ClassVar[str] = "testchat"
    capabilities: ClassVar[Capabilities] = Capabilities(
        dialect="plain", max_length=2000, can_edit=True, custom_sender=True,
        min_edit_interval=0.05, cards=True,
    )
    config_model: ClassVar[type[BaseModel]] = RecordingAccount

    instances: ClassVar[dict[str, RecordingAdapter]] = {}
    chats: ClassVar[dict[str, Chat]] = {}
    """Shared across instances so a restarted bridge posts into the same chat history."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.down = False
        self.send_attempts = 0
        RecordingAdapter.instances[self.account] = self

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    def chat(self, chat_id: str) -> Chat:
        return RecordingAdapter.chats.setdefault(f"{self.account}|{chat_id}", Chat())

    async def send(self, out: Outbound) -> PlatformRef:
        self.send_attempts += 1
        if self.down:
            raise TransientSendError("platform is down", retry_after=0.05)
        chat = self.chat(out.binding.chat)
        ref = PlatformRef(out.binding.chat, f"p{next(_ids)}")
        async with chat.changed:
            chat.messages.append(
                Posted(ref, out.sender_label, out.text, out.kind.value, out.run_id, out.protocol,
                       reply_to=out.reply_to, card=out.card)
            )
            chat.changed.notify_all()
        return ref

    async def edit(self, ref: PlatformRef, out: Outbound) -> None:
        if self.down:
            raise TransientSendError("platform is down", retry_after=0.05)
        chat = self.chat(ref.chat_id)
        async with chat.changed:
            for posted in chat.messages:
                if posted.ref == ref:
                    posted.text, posted.kind = out.text, out.kind.value
                    posted.edits += 1
                    posted.protocol = out.protocol
                    posted.card = out.card
            chat.changed.notify_all()

    async def say(
        self, chat_id: str, text: str, *, name: str = "Ada", user_id: str = "u-ada",
        message_id: str | None = None, is_bot: bool = False, reply_to: str | None = None,
        mentions: tuple[str, ...] = (), is_edit: bool = False, timestamp: datetime | None = None,
        is_delete: bool = False,
    ) -> str:
        """A person (or a platform bot) writes in the chat."""
        message_id = message_id or f"h{next(_ids)}"
        await self.sink(Inbound(
            channel_type=self.channel_type, account=self.account, chat_id=chat_id,
            message_id=message_id, sender=Sender(user_id, name, is_bot), text=text,
            reply_to=reply_to, mentions=mentions, is_edit=is_edit, is_delete=is_delete,
            timestamp=timestamp or datetime.now(UTC),
        ))
        return message_id

    async def tap(
        self, chat_id: str, data: str, *, name: str = "Ada", user_id: str = "u-ada",
        text: str | None = None, roles: tuple[str, ...] = (), tap_id: str | None = None,
    ) -> TapReply:
        """A person presses a card's button (the platform's signed interaction says who)."""
        assert self.taps is not None, "the relay sets where taps go"
        return await self.taps(Tap(
            channel_type=self.channel_type, account=self.account, chat_id=chat_id,
            sender=Sender(user_id, name), data=data, roles=roles, text=text,
            tap_id=tap_id or f"t{next(_ids)}",
        ))
