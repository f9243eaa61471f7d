"""A binding: which platform chat maps to which BCN group, and with what policy.

Declared once here as a pydantic model so the YAML config validates it and the core
uses the very same object at run time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

_CHANNEL_TYPE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


class ProtocolPolicy(BaseModel):
    """How the text protocol is handled in this chat."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    deliver: Literal["natural", "raw"] = Field(
        "natural",
        description="How a REQUEST reaches the addressed bot: plain language or the raw block.",
    )


class LoopGuard(BaseModel):
    """At most `max_messages` bot-authored messages per `window_seconds` without a human."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_messages: int = Field(20, ge=1)
    window_seconds: float = Field(60.0, gt=0)


class Binding(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    channel: str = Field(description='"<type>:<account>", e.g. "telegram:main".')
    chat: str = Field(description="The platform chat id (a room name for webchat).")
    thread: str | None = Field(None, description="Bind one thread/topic only.")
    group: str = Field(description="The BCN group id.", max_length=78)
    identity_forwarding: bool = True
    require_mention: bool = False
    allow_from: list[str] | None = Field(
        None, description="Platform user ids or names allowed to talk to the bots; all when unset."
    )
    display: Literal["auto", "webhook", "username", "prefix"] = "auto"
    protocol: ProtocolPolicy = ProtocolPolicy()
    session_scope: Literal["conversation", "thread", "sender"] = "conversation"
    loop_guard: LoopGuard = LoopGuard()
    allow_everyone: bool = Field(False, description="Let bots ping @everyone/@here in this chat.")
    relay_edits: bool = Field(
        False,
        description="Tell the bots when a human edits (as a new message) or deletes a message.",
    )
    answers: Literal["anyone", "requester"] | list[str] = Field(
        "anyone",
        description=(
            "Who may answer a bot's question with a card's buttons: anyone in the chat, the "
            "requester (the person whose request it is), or a list of platform user ids or "
            "Discord role ids."
        ),
    )

    @field_validator("answers")
    @classmethod
    def _answers_named(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, list) and not any(str(who).strip() for who in value):
            raise ValueError('an empty list lets no one answer; use "anyone" or list ids')
        return value

    @field_validator("channel")
    @classmethod
    def _channel_shape(cls, value: str) -> str:
        channel_type, sep, account = value.partition(":")
        if not sep or not account or not channel_type:
            raise ValueError('expected "<type>:<account>", e.g. "telegram:main"')
        if len(channel_type) > 32 or not set(channel_type) <= _CHANNEL_TYPE_CHARS:
            raise ValueError("channel type must be 1-32 chars of [a-z0-9_-]")
        return value

    @property
    def channel_type(self) -> str:
        return self.channel.partition(":")[0]

    @property
    def account(self) -> str:
        return self.channel.partition(":")[2]

    def matches(self, channel: str, chat_id: str, thread_id: str | None) -> bool:
        """Does a message in this chat (and thread) belong to this binding?"""
        if channel != self.channel or chat_id != self.chat:
            return False
        return self.thread is None or self.thread == thread_id


class BindingIndex:
    """The configured bindings, in config order, found by chat: a bridge with thousands of
    bindings pays one dict lookup per message. Config, read only: built once from the YAML."""

    def __init__(self, bindings: Iterable[Binding]) -> None:
        self._all = tuple(bindings)
        self._by_chat: dict[tuple[str, str], list[Binding]] = {}
        for binding in self._all:
            self._by_chat.setdefault((binding.channel, binding.chat), []).append(binding)

    def __iter__(self) -> Iterator[Binding]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def __getitem__(self, index: int) -> Binding:
        return self._all[index]

    def find(self, channel: str, chat_id: str, thread_id: str | None) -> Binding | None:
        """The most specific binding: a thread-pinned one beats a whole-chat one."""
        best: Binding | None = None
        for binding in self._by_chat.get((channel, chat_id), ()):
            if binding.matches(channel, chat_id, thread_id) and (
                best is None or binding.thread is not None
            ):
                best = binding
        return best

    def by_key(self, key: str) -> Binding | None:
        """The binding whose `binding_key` is `key` (see `bridge.core.spool`)."""
        channel, chat_id, thread = key.split("|", 2)
        for binding in self._by_chat.get((channel, chat_id), ()):
            if (binding.thread or "") == thread:
                return binding
        return None
