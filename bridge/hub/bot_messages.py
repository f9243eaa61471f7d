"""What a bot receives: the params of `chat.send` / `chat.inject` (the channel link adds
who sent it).

Pure builders, so each protocol version's shape is tested without sockets:
- v1: `session_context` is structured and the bot presents it; `session_key` is the
  legacy group-derived key (the group id);
- v2: as v1, plus a readable group-context header prepended to the message text;
- v3: `session_key` is the full BCS session id (`{group}:channel_{type}_{hex}`), text as-is.

Every version also gets what the BCN server adds: `idempotency_key` on `chat.send` (unique
per delivery; engines use it as their run id and ignore a repeat), and in
`session_context` the group's `group_type`, the recipient's `recipient_role` and uuid.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Utterance:
    """One message in a session, as every recipient is told about it."""

    text: str
    timestamp: int
    author: str
    channel: dict[str, Any]
    session_id: str
    group_id: str
    group_name: str
    participants: tuple[str, ...]
    originator: str | None
    mentions: tuple[str, ...] = ()
    routing_reason: str = ""
    extra_context: dict[str, Any] = field(default_factory=dict)
    group_type: str = "default"


def session_key_for(version: int, session_id: str, group_id: str) -> str:
    return session_id if version >= 3 else group_id


def group_context_header(u: Utterance, recipient: str, mentioned: bool) -> str:
    """The v2 "Group Context" block: who is here, who is talking, whether you are asked."""
    lines = [
        "[Group Context]",
        f"Group: {u.group_name} ({u.group_id})",
        f"Session: {u.session_id}",
        f"Participants: {', '.join(u.participants) or '-'}",
        f"From: {u.author}",
        f"You are: {recipient}",
        f"You are mentioned: {'yes' if mentioned else 'no'}",
    ]
    if u.routing_reason:
        lines.append(f"Routing reason: {u.routing_reason}")
    lines.append("[/Group Context]")
    return "\n".join(lines) + "\n\n"


def chat_params(
    u: Utterance,
    *,
    version: int,
    recipient: str,
    mentioned: bool,
    is_sender: bool,
    timeout_ms: int | None,
    recipient_uuid: str | None = None,
    role: str | None = None,
    idempotency_key: str | None = None,
) -> dict[str, Any]:
    """Params for one recipient; `timeout_ms` and the key are None for `chat.inject`."""
    text = u.text
    if version == 2:
        text = group_context_header(u, recipient, mentioned) + text
    context: dict[str, Any] = {
        "session_id": u.group_id,
        "participants": list(u.participants),
        "originator": u.originator,
        "from": u.author,
        "you_are_mentioned": mentioned,
        "is_sender": is_sender,
        "mentions": list(u.mentions),
        "message": u.text,
        "group_type": u.group_type,
    }
    if recipient_uuid is not None:
        context["recipient"] = recipient_uuid
    if role is not None:
        context["recipient_role"] = role
    if u.routing_reason:
        context["routing_reason"] = u.routing_reason
    context.update(u.extra_context)
    params: dict[str, Any] = {
        "session_key": session_key_for(version, u.session_id, u.group_id),
        "bcs_group_id": u.group_id,
        "bcs_session_id": u.session_id,
        "message": {
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "timestamp": u.timestamp,
        },
        "channel": u.channel,
        "session_context": context,
    }
    if timeout_ms is not None:
        params["timeout_ms"] = timeout_ms
    if idempotency_key is not None:
        params["idempotency_key"] = idempotency_key
    return params
