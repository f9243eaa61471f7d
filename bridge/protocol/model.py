"""The parsed form of a protocol message: one immutable record the whole bridge passes around."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bridge.protocol.depth import Depth
from bridge.protocol.options import options_of


class MessageType(StrEnum):
    """The five message kinds; a `StrEnum` so `msg.type == "REQUEST"` reads naturally."""

    REQUEST = "REQUEST"
    RESPONSE = "RESPONSE"
    CLARIFY = "CLARIFY"
    HANDOFF = "HANDOFF"
    BROADCAST = "BROADCAST"


STATUSES: frozenset[str] = frozenset({"done", "partial", "failed"})
PRIORITIES: frozenset[str] = frozenset({"low", "normal", "high"})


@dataclass(frozen=True)
class ProtocolMessage:
    """One protocol message as read from chat text.

    String fields hold the value exactly as the sender wrote it (trimmed); a field the
    sender left out is `None`. `meta` keeps unknown fields under their original spelling
    so nothing a newer bot adds is lost. `raw` is the whole text the message came from.
    """

    type: MessageType
    to: str
    from_: str
    request_id: str | None = None
    task: str | None = None
    result: str | None = None
    status: str | None = None
    question: str | None = None
    message: str | None = None
    context: str | None = None
    depth: Depth | None = None
    callback: str | None = None
    priority: str | None = None
    original_from: str | None = None
    expires: str | None = None
    meta: dict[str, str] = field(default_factory=dict)
    raw: str = ""
    depth_unreadable: str | None = None
    """A `Depth:` value that is not `N/M` (say `-1/5`), as written; `depth` is then None.
    The relay refuses such a message rather than reading it as the default 1/5. Not part of
    `to_dict`, which holds what the reference reports."""

    @property
    def options(self) -> tuple[str, ...]:
        """A CLARIFY's choices (its `Options:` field, kept in `meta`); `()` if none."""
        return options_of(self)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view with the wire spelling `from` (a Python keyword, hence `from_`)."""
        return {
            "type": str(self.type),
            "to": self.to,
            "from": self.from_,
            "request_id": self.request_id,
            "task": self.task,
            "result": self.result,
            "status": self.status,
            "question": self.question,
            "message": self.message,
            "context": self.context,
            "depth": (
                None
                if self.depth is None
                else {"current": self.depth.current, "max": self.depth.max}
            ),
            "callback": self.callback,
            "priority": self.priority,
            "original_from": self.original_from,
            "expires": self.expires,
            "meta": dict(self.meta),
        }


def unfilled_message() -> tuple[ProtocolMessage, dict[str, Any]]:
    """The parser's hot-path constructor: a bare instance and its attribute dict to fill.

    A frozen dataclass sets each of its 17 attributes through `object.__setattr__`, which
    was a fifth of a whole parse. The parser writes the attributes it read straight into
    the instance dict instead; attributes it leaves out fall back to the class-level
    defaults exactly as the generated `__init__` would. The caller must set `type`, `to`,
    `from_`, `meta` and `raw` (they have no class-level default) before handing it out.
    """
    message = object.__new__(ProtocolMessage)
    return message, message.__dict__
