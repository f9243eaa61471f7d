"""`parse`: chat text in, `ProtocolMessage` or `None` out — never an exception.

Lenient in: the skill dialect (the reference library's) and the article dialect are
both read. Where the reference library returns a message, the same field values come
out here; where it rejects a block for a missing field or an unknown type, so does this.
"""

from __future__ import annotations

from typing import Any

from bridge.protocol.depth import parse_depth
from bridge.protocol.locate import locate_block
from bridge.protocol.model import (
    PRIORITIES,
    STATUSES,
    MessageType,
    ProtocolMessage,
    unfilled_message,
)
from bridge.protocol.names import decode_name
from bridge.protocol.syntax import (
    ARTICLE_FIELD_FOR_KEY,
    FIELD_FOR_KEY,
    FIELD_SEPARATOR,
    FIELD_SEPARATOR_ONE_LINE,
    JS_WHITESPACE,
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
# The field each type must carry (a RESPONSE may carry a valid Status instead).
_REQUIRED_FIELD: dict[MessageType, str] = {
    MessageType.REQUEST: "task",
    MessageType.HANDOFF: "task",
    MessageType.RESPONSE: "result",
    MessageType.CLARIFY: "question",
    MessageType.BROADCAST: "message",
}


def parse(text: object) -> ProtocolMessage | None:
    """The protocol message in `text`, or `None` if there is none (or it is invalid).

    The checks run in the reference's order. This is the hot path of every chat message
    the bridge sees, so the small steps are written out here rather than called: each
    Python call costs as much as the check it would wrap.
    """
    if not isinstance(text, str) or "[" not in text:  # every header has one: plain chat
        return None
    block = locate_block(text)
    if block is None:
        return None
    message_type = _MESSAGE_TYPES.get(block.type_name)
    if message_type is None:
        return None
    article = not block.skill_form
    message, fields = unfilled_message()
    meta = _read_fields(block.body, ARTICLE_FIELD_FOR_KEY if article else FIELD_FOR_KEY, fields)
    get = fields.get
    if not get("from_"):
        return None
    if not get("request_id"):
        # The article dialect's BROADCAST carries no RequestId; every other message must.
        if not (article and message_type is MessageType.BROADCAST):
            return None
        fields["request_id"] = None
    status = get("status")
    if status is not None:
        if article:
            status = _ARTICLE_STATUS.get(status.lower().replace("-", "_"))
        elif status not in STATUSES:
            status = None
        fields["status"] = status
    if not get(_REQUIRED_FIELD[message_type]) and not (
        message_type is MessageType.RESPONSE and status
    ):
        return None
    priority = get("priority")
    if priority is not None:
        if article:
            priority = priority.lower()
        fields["priority"] = priority if priority in PRIORITIES else None
    depth = get("depth")
    if depth is not None:
        read = parse_depth(depth, loose=article) if depth else None
        fields["depth"] = read
        if read is None and depth:
            fields["depth_unreadable"] = depth
    target = block.target
    if article and target.lower() in _BROADCAST_TARGETS:
        target = "all"
    elif "%" in target:
        target = decode_name(target)  # a person's name with blanks, as the builders write it
    fields["type"] = message_type
    fields["to"] = target
    fields["meta"] = meta
    fields["raw"] = text
    return message


def _read_fields(body: str, known: dict[str, str], fields: dict[str, Any]) -> dict[str, str]:
    """Split the lines after the header into `fields`; return the unknown ones (`meta`).

    A value runs from its key to the next key line, continuation lines included, so one
    regex split does all the work; text before the first key is skipped. A later duplicate
    key wins.
    """
    # Trailing whitespace must go first: a CR or U+2028 in it would otherwise make the last
    # key line look like two JavaScript lines, and so not a key line.
    body = body.rstrip(JS_WHITESPACE)
    if "\r" in body or "\u2028" in body or "\u2029" in body:
        parts = FIELD_SEPARATOR.split(body)
    else:
        parts = FIELD_SEPARATOR_ONE_LINE.split(body)
    meta: dict[str, str] = {}
    pairs = iter(parts)
    next(pairs)  # the text before the first key
    for key, value in zip(pairs, pairs, strict=True):
        attribute = known.get(key)
        if attribute is None:
            attribute = attribute_for_key(key, known)
        if attribute:
            fields[attribute] = value.strip(JS_WHITESPACE)
        else:
            meta[key] = value.strip(JS_WHITESPACE)
    return meta
