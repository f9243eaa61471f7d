"""What a bot receives: `chat.send` / `chat.inject` params turned into a typed message.

Parsing is strict only where the SDK has to act (a session key to answer in, a group id to
stamp on replies) and lenient everywhere else, so that newer BCNs with extra fields keep
working. Bad input raises `BcnError(invalid_request)`, which the connection sends back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bridge.bcn.errors import BcnError, ErrorCode
from bridge.bcn.run_events import content_text, now_ms

if TYPE_CHECKING:
    from bridge.protocol import ProtocolMessage


@dataclass(frozen=True, slots=True)
class ChannelInfo:
    """Where a message came from (identity forwarding; the channel link §2).

    `user_id` and `actor_name` are the platform's own values only when
    `identity_forwarding` is true; they are never an authentication signal.
    """

    source: str | None = None
    user_id: str | None = None
    actor_name: str | None = None
    identity_forwarding: bool = False
    conversation_id: str | None = None
    thread_id: str | None = None
    message_id: str | None = None
    is_bot: bool = False
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_params(cls, channel: Any) -> ChannelInfo:
        if channel is None:
            return cls()
        if not isinstance(channel, dict):
            raise BcnError(ErrorCode.INVALID_REQUEST, "'channel' must be an object")
        return cls(
            source=_optional_str(channel, "source"),
            user_id=_optional_str(channel, "user_id"),
            actor_name=_optional_str(channel, "actor_name"),
            identity_forwarding=channel.get("identity_forwarding") is True,
            conversation_id=_optional_str(channel, "conversation_id"),
            thread_id=_optional_str(channel, "thread_id"),
            message_id=_optional_str(channel, "message_id"),
            is_bot=channel.get("is_bot") is True,
            raw=dict(channel),
        )


@dataclass(frozen=True, slots=True)
class IncomingMessage:
    """One message BCN routed to this bot, either to answer (`chat.send`) or to observe."""

    text: str
    session_key: str
    bcs_group_id: str
    bcs_session_id: str | None = None
    channel: ChannelInfo = field(default_factory=ChannelInfo)
    session_context: dict[str, Any] = field(default_factory=dict)
    timestamp: int | None = None
    timeout_ms: int | None = None
    observe_only: bool = False
    params: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_params(
        cls, params: dict[str, Any], *, observe_only: bool = False,
        require_session_id: bool = False,
    ) -> IncomingMessage:
        """Parse `chat.send` / `chat.inject` params.

        `require_session_id` is set on v3 connections: there every delivery carries the
        canonical `bcs_session_id`, and one without it is refused rather than guessed.
        """
        session_key = params.get("session_key")
        if not isinstance(session_key, str) or not session_key:
            raise BcnError(ErrorCode.INVALID_REQUEST, "'session_key' must be a non-empty string")
        session_id = params.get("bcs_session_id")
        if require_session_id and (not isinstance(session_id, str) or not session_id):
            raise BcnError(ErrorCode.INVALID_REQUEST,
                           "v3 deliveries need a non-empty 'bcs_session_id'")
        group_id = params.get("bcs_group_id")
        if group_id is None:
            group_id = session_key.split(":", 1)[0]
        if not isinstance(group_id, str) or not group_id:
            raise BcnError(ErrorCode.INVALID_REQUEST, "'bcs_group_id' must be a non-empty string")
        message = params.get("message") or {}
        if not isinstance(message, dict):
            raise BcnError(ErrorCode.INVALID_REQUEST, "'message' must be an object")
        context = params.get("session_context") or {}
        if not isinstance(context, dict):
            raise BcnError(ErrorCode.INVALID_REQUEST, "'session_context' must be an object")
        timestamp = message.get("timestamp")
        timeout_ms = params.get("timeout_ms")
        return cls(
            text=text_of(message.get("content")),
            session_key=session_key,
            bcs_group_id=group_id,
            bcs_session_id=_optional_str(params, "bcs_session_id"),
            channel=ChannelInfo.from_params(params.get("channel")),
            session_context=dict(context),
            timestamp=timestamp if _is_int(timestamp) else None,
            timeout_ms=timeout_ms if _is_int(timeout_ms) else None,
            observe_only=observe_only,
            params=params,
        )

    @property
    def sender_name(self) -> str | None:
        """The best display name for whoever wrote this: forwarded actor, else context `from`.

        `actor_name` counts only under `identity_forwarding: true` (without the
        marker, the usual sender resolution applies).
        """
        if self.channel.identity_forwarding and self.channel.actor_name:
            return self.channel.actor_name
        sender = self.session_context.get("from")
        return sender if isinstance(sender, str) and sender else None

    @property
    def you_are_mentioned(self) -> bool:
        return self.session_context.get("you_are_mentioned") is True

    @property
    def protocol(self) -> ProtocolMessage | None:
        """The text-protocol message in `text`, or None for ordinary chat."""
        from bridge.protocol import parse

        return parse(self.text)


def text_of(content: Any) -> str:
    """Join the text parts of a message `content`; a bare string is accepted too."""
    return content_text(content)


def assistant_message(text: str, timestamp_ms: int | None = None) -> dict[str, Any]:
    """The `message` object of a `chat.event`."""
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "timestamp": now_ms() if timestamp_ms is None else timestamp_ms,
    }


def _optional_str(source: dict[str, Any], key: str) -> str | None:
    value = source.get(key)
    if value is None:
        return None
    if isinstance(value, bool):
        raise BcnError(ErrorCode.INVALID_REQUEST, f"'{key}' must be a string")
    if isinstance(value, str | int):
        return str(value)
    raise BcnError(ErrorCode.INVALID_REQUEST, f"'{key}' must be a string")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
