"""What the tracker needs from a protocol message, and how it recognises one it has seen.

The tracker depends on these attribute names only (structural typing), so any object shaped
like `bridge.protocol.ProtocolMessage` can be tracked.
"""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

from bridge.tracking.vocabulary import BROADCAST, CLARIFY, MESSAGE_TYPES, RESPONSE


class DepthLike(Protocol):
    current: int
    max: int


class TrackedMessage(Protocol):
    """The fields of a parsed protocol message the tracker reads."""

    type: str
    to: str
    from_: str
    request_id: str
    task: str | None
    result: str | None
    status: str | None
    question: str | None
    message: str | None
    context: str | None
    depth: DepthLike | None
    callback: str | None
    priority: str | None
    original_from: str | None
    expires: str | None
    meta: Any


def check_message(message: TrackedMessage) -> None:
    """Refuse what cannot be tracked with a clear error instead of a crash further down."""
    if getattr(message, "type", None) not in MESSAGE_TYPES:
        raise ValueError(
            f"cannot track message type {getattr(message, 'type', None)!r};"
            f" expected one of {', '.join(sorted(MESSAGE_TYPES))}"
        )
    request_id = getattr(message, "request_id", None)
    if not isinstance(request_id, str) or not request_id.strip():
        raise ValueError(f"cannot track a {message.type} without a request id")


def depth_of(message: TrackedMessage) -> tuple[int, int] | None:
    depth = message.depth
    return None if depth is None else (int(depth.current), int(depth.max))


def content_of(message: TrackedMessage) -> str | None:
    """The text that says what this message is about, for the history."""
    if message.type == RESPONSE:
        return message.result
    if message.type == CLARIFY:
        return message.question
    if message.type == BROADCAST:
        return message.message or message.task
    return message.task


def fingerprint(message: TrackedMessage) -> str:
    """A short digest of every field, so re-seeing the same message is recognised.

    It covers fields, not raw text: the same message re-rendered with other whitespace or
    the other dialect is still the same message.
    """
    meta = message.meta
    fields = (
        str(message.type),
        message.to,
        message.from_,
        message.request_id,
        message.task,
        message.result,
        message.status,
        message.question,
        message.message,
        message.context,
        depth_of(message),
        message.callback,
        message.priority,
        message.original_from,
        message.expires,
        sorted((str(key), str(value)) for key, value in meta.items())
        if isinstance(meta, dict)
        else None,
    )
    return hashlib.blake2b(repr(fields).encode(), digest_size=8).hexdigest()
