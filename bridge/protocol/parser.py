"""`parse`: chat text in, `ProtocolMessage` or `None` out — never an exception.

Lenient in: the skill dialect (the reference library's) and the article dialect are
both read. Where the reference library returns a message, the same field values come
out here; where it rejects a block for a missing field or an unknown type, so does this.
"""

from __future__ import annotations

from typing import Any

from bridge.protocol.depth import Depth, parse_depth
from bridge.protocol.locate import Block, locate_block
from bridge.protocol.model import (
    PRIORITIES,
    STATUSES,
    MessageType,
    ProtocolMessage,
    assemble_message,
)
from bridge.protocol.syntax import (
    ARTICLE_FIELD_FOR_KEY,
    FIELD_FOR_KEY,
    FIELD_KEY,
    JS_WHITESPACE,
    META,
    attribute_for_key,
)

_ARTICLE_STATUS = {
    "done": "done",
    "partial": "partial",
    "failed": "failed",
    "success": "done",
    "partial_success": "partial",
}
_BROADCAST_TARGETS = frozenset({"all", "*all*", "broadcast"})
_MESSAGE_TYPES: dict[str, MessageType] = {kind.value: kind for kind in MessageType}


def parse(text: object) -> ProtocolMessage | None:
    """The protocol message in `text`, or `None` if there is none (or it is invalid)."""
    if not isinstance(text, str) or ("```" not in text and "[" not in text):
        return None
    block = locate_block(text)
    if block is None or block.type_name not in _MESSAGE_TYPES:
        return None
    return _message_from_block(block, text)


def _message_from_block(block: Block, text: str) -> ProtocolMessage | None:
    article = not block.skill_form
    fields, meta = _read_fields(block.body, ARTICLE_FIELD_FOR_KEY if article else FIELD_FOR_KEY)
    message_type = _MESSAGE_TYPES[block.type_name]
    if not fields.get("from_"):
        return None
    if not fields.get("request_id"):
        # The article dialect's BROADCAST carries no RequestId; every other message must.
        if not (article and message_type is MessageType.BROADCAST):
            return None
        fields["request_id"] = None
    if "status" in fields:
        fields["status"] = _status(fields["status"], article)
    if not _has_required_field(message_type, fields):
        return None
    if "priority" in fields:
        fields["priority"] = _priority(fields["priority"], article)
    if "depth" in fields:
        depth_text = fields["depth"]
        fields["depth"] = _depth(depth_text, article) if depth_text else None
    to = _target(block) if article else block.target
    return assemble_message(message_type, to, fields, meta, text)


def _read_fields(body: str, known: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Split the lines after the header into fields; a later duplicate key wins.

    A value runs from its key to the next key line, continuation lines included, so one
    regex split does all the work; text before the first key is skipped.
    """
    parts = FIELD_KEY.split(body.rstrip(JS_WHITESPACE))
    fields: dict[str, Any] = {}
    meta: dict[str, str] = {}
    for key, value in zip(parts[1::2], parts[2::2], strict=True):
        attribute = known.get(key) or attribute_for_key(key, known)
        if attribute == META:
            meta[key] = value.strip(JS_WHITESPACE)
        else:
            fields[attribute] = value.strip(JS_WHITESPACE)
    return fields, meta


def _has_required_field(message_type: MessageType, fields: dict[str, Any]) -> bool:
    if message_type is MessageType.REQUEST or message_type is MessageType.HANDOFF:
        return bool(fields.get("task"))
    if message_type is MessageType.RESPONSE:
        return bool(fields.get("result") or fields.get("status"))
    if message_type is MessageType.CLARIFY:
        return bool(fields.get("question"))
    return bool(fields.get("message"))


def _status(value: str | None, article: bool) -> str | None:
    if value is None:
        return None
    if article:
        return _ARTICLE_STATUS.get(value.lower().replace("-", "_"))
    return value if value in STATUSES else None


def _priority(value: str | None, article: bool) -> str | None:
    if value is None:
        return None
    if article:
        value = value.lower()
    return value if value in PRIORITIES else None


def _depth(value: str, article: bool) -> Depth | None:
    return parse_depth(value, loose=article)


def _target(block: Block) -> str:
    if block.target.lower() in _BROADCAST_TARGETS:
        return "all"
    return block.target
