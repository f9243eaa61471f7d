"""The protocol middleware's decisions, as plain functions over protocol messages.

The relay calls these to turn a protocol REQUEST into what a BCN bot reads, to wrap a bot's
plain reply into a canonical RESPONSE, and to refuse what the depth rule forbids — so a BCN
bot never has to hand-format protocol text and a platform bot always gets protocol text back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bridge.protocol import (
    DEFAULT_DEPTH,
    MAX_DEPTH_CAP,
    Depth,
    ProtocolMessage,
    build_response,
    escape_value,
    next_depth,
)
from bridge.protocol.depth import check_depth

FORWARDED_TYPES = frozenset({"REQUEST", "HANDOFF"})


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """What the relay remembers about a request it routed to one BCN bot."""

    request_id: str
    requester: str
    bot: str
    depth: Depth
    original_from: str | None = None

    def to_record(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "requester": self.requester,
            "bot": self.bot,
            "depth": list(self.depth),
            "original_from": self.original_from,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> PendingRequest:
        current, maximum = record["depth"]
        return cls(
            request_id=record["request_id"],
            requester=record["requester"],
            bot=record["bot"],
            depth=Depth(int(current), int(maximum)),
            original_from=record.get("original_from"),
        )


def depth_of(msg: ProtocolMessage) -> Depth:
    return msg.depth if msg.depth is not None else DEFAULT_DEPTH


def depth_violation(msg: ProtocolMessage, max_depth_cap: int = MAX_DEPTH_CAP) -> str | None:
    """Why this message may not be forwarded (the builders' own depth rule), or None.

    A `Depth:` that cannot be read (`-1/5`) is refused too: taking it as the default 1/5
    would let any message restart its chain's count."""
    if msg.depth_unreadable is not None:
        return f"Depth {msg.depth_unreadable!r} is not a depth (N/M, with 1 <= N <= M)"
    try:
        check_depth(depth_of(msg), msg.type, max_depth_cap)
    except ValueError as exc:
        return str(exc)
    return None


def refusal(msg: ProtocolMessage, reason: str, bridge_name: str) -> str:
    """The `failed` RESPONSE the bridge sends itself instead of forwarding `msg`."""
    depth = depth_of(msg)
    answer_depth = Depth(min(depth.current, depth.max), depth.max)
    if not 1 <= answer_depth.current <= answer_depth.max <= MAX_DEPTH_CAP:
        answer_depth = DEFAULT_DEPTH
    return build_response(
        to=msg.from_,
        from_=bridge_name,
        request_id=msg.request_id,
        status="failed",
        result=reason,
        depth=answer_depth,
    )


def natural_text(msg: ProtocolMessage) -> str:
    """How a protocol message reads to a BCN bot that only speaks plain language."""
    depth = depth_of(msg)
    where = f"(request {msg.request_id}, depth {depth.current}/{depth.max})"
    if msg.type == "REQUEST":
        text = f"{msg.from_} asks you to: {msg.task}"
    elif msg.type == "HANDOFF":
        origin = f" on behalf of {msg.original_from}" if msg.original_from else ""
        text = f"{msg.from_} hands this task over to you{origin}: {msg.task}"
    elif msg.type == "CLARIFY":
        text = f"{msg.from_} needs a clarification: {msg.question}"
    elif msg.type == "RESPONSE":
        status = f" ({msg.status})" if msg.status else ""
        text = f"{msg.from_} answered{status}: {msg.result or ''}".rstrip()
    else:
        text = f"{msg.from_} announces: {msg.message}"
    if msg.context:
        text += f"\nContext: {msg.context}"
    return f"{text}\n{where}"


def reply_as_response(pending: PendingRequest, text: str, status: str = "done") -> str:
    """A bot's plain final reply to a routed request, as the canonical RESPONSE."""
    depth = next_depth(pending.depth)
    if depth.current > depth.max:
        depth = Depth(depth.max, depth.max)
    return build_response(
        to=pending.requester,
        from_=pending.bot,
        request_id=pending.request_id,
        status=status,
        result=escape_value(text).strip() or ("(no answer)" if status == "done" else status),
        depth=depth,
    )
