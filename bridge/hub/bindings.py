"""Bindings a channel link claims: validation, stable ids, scope keys.

A `binding_id` is derived from channel type, account and conversation, so it is the same
every time any bridge instance claims that chat — across reconnects and hub restarts —
without the hub having to store it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bridge.hub.config import MAX_GROUP_ID_LENGTH

_CHANNEL_TYPE = re.compile(r"[a-z0-9_-]{1,32}")
SCOPES = ("conversation", "thread", "sender")
VISIBILITIES = ("full_transcript", "lead_only")


class BindingError(ValueError):
    """A binding the link sent that cannot be served; the message says which and why."""


@dataclass(frozen=True, slots=True)
class BindingSpec:
    binding_id: str
    channel_type: str
    account_ref: str
    conversation_id: str
    group_id: str
    session_scope: Literal["conversation", "thread", "sender"] = "conversation"
    identity_forwarding: bool = False
    outbound_visibility: Literal["full_transcript", "lead_only"] = "full_transcript"

    def echo(self) -> dict[str, Any]:
        return {
            "binding_id": self.binding_id,
            "channel_type": self.channel_type,
            "account_ref": self.account_ref,
            "conversation_id": self.conversation_id,
            "group_id": self.group_id,
            "session_scope": self.session_scope,
            "identity_forwarding": self.identity_forwarding,
            "outbound_visibility": self.outbound_visibility,
        }


def binding_id_for(channel_type: str, account_ref: str, conversation_id: str) -> str:
    digest = hashlib.sha256(f"{channel_type}\0{account_ref}\0{conversation_id}".encode())
    return "bnd_" + digest.hexdigest()[:20]


def parse_binding(raw: object, index: int) -> BindingSpec:
    """Check one binding object from `channel.connect`; raises `BindingError`."""
    where = f"bindings[{index}]"
    if not isinstance(raw, Mapping):
        raise BindingError(f"{where} must be an object")
    channel_type = raw.get("channel_type")
    if not isinstance(channel_type, str) or not _CHANNEL_TYPE.fullmatch(channel_type):
        raise BindingError(f"{where}.channel_type must be 1-32 chars of [a-z0-9_-]")
    texts = {}
    for key in ("account_ref", "conversation_id", "group_id"):
        value = raw.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not value:
            raise BindingError(f"{where}.{key} must be a non-empty string")
        texts[key] = value
    if len(texts["group_id"]) > MAX_GROUP_ID_LENGTH:
        raise BindingError(f"{where}.group_id is longer than {MAX_GROUP_ID_LENGTH} characters")
    scope = raw.get("session_scope") or "conversation"
    if scope not in SCOPES:
        raise BindingError(f"{where}.session_scope must be one of {', '.join(SCOPES)}")
    visibility = raw.get("outbound_visibility") or "full_transcript"
    if visibility not in VISIBILITIES:
        raise BindingError(f"{where}.outbound_visibility must be one of {', '.join(VISIBILITIES)}")
    forwarding = raw.get("identity_forwarding", False)
    if not isinstance(forwarding, bool):
        raise BindingError(f"{where}.identity_forwarding must be true or false")
    return BindingSpec(
        binding_id_for(channel_type, texts["account_ref"], texts["conversation_id"]),
        channel_type,
        texts["account_ref"],
        texts["conversation_id"],
        texts["group_id"],
        scope,
        forwarding,
        visibility,
    )


def scope_key(spec: BindingSpec, thread_id: str | None, sender_user_id: str | None) -> str:
    """Which session of the binding a message belongs to.

    `thread` scope without a thread id, and `sender` scope without a sender, fall back
    to the conversation-wide session.
    """
    if spec.session_scope == "thread" and thread_id:
        return f"thread:{thread_id}"
    if spec.session_scope == "sender" and sender_user_id:
        return f"sender:{sender_user_id}"
    return ""
