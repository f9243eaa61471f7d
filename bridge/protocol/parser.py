"""`parse`: chat text in, `ProtocolMessage` or `None` out — never an exception.

Lenient in: the skill dialect (the reference library's) and the article dialect are
both read. Where the reference library returns a message, the same field values come
out here; where it rejects a block for a missing field or an unknown type, so does this.
"""

from __future__ import annotations

from bridge.protocol.depth import Depth, parse_depth
from bridge.protocol.locate import Block, locate_block
from bridge.protocol.model import PRIORITIES, STATUSES, MessageType, ProtocolMessage
from bridge.protocol.syntax import (
    ARTICLE_DEPTH,
    ARTICLE_FIELD_FOR_KEY,
    FIELD_FOR_KEY,
    JS_WHITESPACE,
    KEY_LINE,
    META,
    field_for_key,
)

_ARTICLE_STATUS = {
    "done": "done",
    "partial": "partial",
    "failed": "failed",
    "success": "done",
    "partial_success": "partial",
}
_BROADCAST_TARGETS = frozenset({"all", "*all*", "broadcast"})


def parse(text: object) -> ProtocolMessage | None:
    """The protocol message in `text`, or `None` if there is none (or it is invalid)."""
    if not isinstance(text, str) or ("```" not in text and "[" not in text):
        return None
    block = locate_block(text)
    if block is None or block.type_name not in MessageType.__members__:
        return None
    return _message_from_block(block, text)


def _message_from_block(block: Block, text: str) -> ProtocolMessage | None:
    article = not block.skill_form
    fields, meta = _read_fields(block.body, ARTICLE_FIELD_FOR_KEY if article else FIELD_FOR_KEY)
    message_type = MessageType(block.type_name)

    from_ = fields.get("from_")
    request_id = fields.get("request_id")
    status = _status(fields.get("status"), article)
    if not from_:
        return None
    if not request_id and not (article and message_type is MessageType.BROADCAST):
        # The article dialect's BROADCAST carries no RequestId; every other message must.
        return None
    if not _has_required_field(message_type, fields, status):
        return None

    depth_text = fields.get("depth")
    return ProtocolMessage(
        type=message_type,
        to=_target(block) if article else block.target,
        from_=from_,
        request_id=request_id or None,
        task=fields.get("task"),
        result=fields.get("result"),
        status=status,
        question=fields.get("question"),
        message=fields.get("message"),
        context=fields.get("context"),
        depth=_depth(depth_text, article) if depth_text else None,
        callback=fields.get("callback"),
        priority=_priority(fields.get("priority"), article),
        original_from=fields.get("original_from"),
        expires=fields.get("expires"),
        meta=meta,
        raw=text,
    )


def _read_fields(body: str, known: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Split the lines after the header into fields; a later duplicate key wins.

    A value runs from its key line to the next key line, so continuation lines (and any
    lines before the first key, which are skipped) need no joining: one slice per field.
    """
    body = body.rstrip(JS_WHITESPACE)
    fields: dict[str, str] = {}
    meta: dict[str, str] = {}
    key = ""
    attribute: str | None = None
    value_start = 0
    for line in KEY_LINE.finditer(body):
        next_key = line.group(1)
        next_attribute = field_for_key(next_key, known)
        if next_attribute is None:
            continue
        if attribute is not None:
            _store(fields, meta, key, attribute, body[value_start : line.start()])
        key, attribute, value_start = next_key, next_attribute, line.end(1) + 1
    if attribute is not None:
        _store(fields, meta, key, attribute, body[value_start:])
    return fields, meta


def _store(
    fields: dict[str, str], meta: dict[str, str], key: str, attribute: str, value: str
) -> None:
    if attribute == META:
        meta[key] = value.strip(JS_WHITESPACE)
    else:
        fields[attribute] = value.strip(JS_WHITESPACE)


def _has_required_field(
    message_type: MessageType, fields: dict[str, str], status: str | None
) -> bool:
    if message_type is MessageType.REQUEST or message_type is MessageType.HANDOFF:
        return bool(fields.get("task"))
    if message_type is MessageType.RESPONSE:
        return bool(fields.get("result") or status)
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
    return parse_depth(value, ARTICLE_DEPTH) if article else parse_depth(value)


def _target(block: Block) -> str:
    if block.target.lower() in _BROADCAST_TARGETS:
        return "all"
    return block.target
