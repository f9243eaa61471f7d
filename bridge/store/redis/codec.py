"""Exact JSON for what the Redis store keeps: decode(encode(x)) == x, field for field.

Times are integer microseconds since the epoch, as SQLite writes them (`bridge.store.micros`),
so no precision is lost and a score in a sorted set orders like the time. Optional fields that
are None are left out, which keeps an open conversation's record small; JSON is compact and
UTF-8 (Redis strings are binary-safe), so `redis-cli` still shows something an operator can
read. The JSON itself is `bridge.fastjson`'s, as for the SQLite store's rows (exact for
integers within 64 bits, which every number here is).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from bridge.fastjson import dumps, loads
from bridge.store.loop_guard import LaneGuard
from bridge.store.micros import from_micros, to_micros
from bridge.store.records import Conversation, HistoryEntry
from bridge.store.relay import OutboxItem, SpoolEntry


def _micros(moment: datetime | None) -> int | None:
    return None if moment is None else to_micros(moment)


def _moment(micros: int | None) -> datetime | None:
    return None if micros is None else from_micros(micros)


def _without_none(data: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in data.items() if value is not None}


# Conversations: one Redis list, the record first and then the history entries in order.


def encode_record(conversation: Conversation) -> str:
    """The conversation without its history (the entries are the list's other elements)."""
    return dumps(_without_none({
        "request_id": conversation.request_id,
        "type": conversation.type,
        "from": conversation.from_,
        "to": conversation.to,
        "status": conversation.status,
        "created_at": to_micros(conversation.created_at),
        "updated_at": to_micros(conversation.updated_at),
        "last_type": conversation.last_type,
        "task": conversation.task,
        "depth": list(conversation.depth) if conversation.depth is not None else None,
        "original_from": conversation.original_from,
        "chat": conversation.chat,
        "deadline": _micros(conversation.deadline),
    }))  # fmt: skip


def encode_entry(entry: HistoryEntry) -> str:
    return dumps(_without_none({
        "type": entry.type, "from": entry.from_, "to": entry.to, "status": entry.status,
        "at": to_micros(entry.at), "content": entry.content, "fingerprint": entry.fingerprint,
    }))  # fmt: skip


def decode_conversation(elements: Sequence[str]) -> Conversation | None:
    """The conversation a list holds ([record, entry, …]); None for an empty (absent) list."""
    if not elements:
        return None
    data = loads(elements[0])
    depth = data.get("depth")
    return Conversation(
        request_id=data["request_id"],
        type=data["type"],
        from_=data["from"],
        to=data["to"],
        status=data["status"],
        created_at=from_micros(data["created_at"]),
        updated_at=from_micros(data["updated_at"]),
        last_type=data["last_type"],
        task=data.get("task"),
        depth=(depth[0], depth[1]) if depth is not None else None,
        original_from=data.get("original_from"),
        chat=data.get("chat"),
        deadline=_moment(data.get("deadline")),
        history=tuple(_decode_entry(element) for element in elements[1:]),
    )


def _decode_entry(element: str) -> HistoryEntry:
    data = loads(element)
    return HistoryEntry(
        type=data["type"],
        from_=data["from"],
        to=data["to"],
        status=data["status"],
        at=from_micros(data["at"]),
        content=data.get("content"),
        fingerprint=data.get("fingerprint"),
    )


# Outbox items: a list [item, sent part 0, sent part 1, …] so recording a part is one LSET.


def encode_item(item: OutboxItem) -> str:
    """The whole item (sent parts included), as a held item keeps it."""
    return dumps({"created_at": _micros(item.created_at), "body": item.to_body()})


def decode_item(text: str, item_id: int = 0) -> OutboxItem:
    data = loads(text)
    return OutboxItem.from_body(data["body"], id=item_id, created_at=_moment(data["created_at"]))


def encode_queued_item(item: OutboxItem) -> list[str]:
    """The list elements of a queued item: the item without `sent`, then one per part."""
    body = item.to_body()
    sent = body.pop("sent")
    head = dumps({"created_at": _micros(item.created_at), "body": body})
    return [head, *(dumps(message_id) for message_id in sent)]


def decode_queued_item(elements: Sequence[str], item_id: int) -> OutboxItem:
    data = loads(elements[0])
    body = {**data["body"], "sent": [loads(element) for element in elements[1:]]}
    return OutboxItem.from_body(body, id=item_id, created_at=_moment(data["created_at"]))


def encode_message_id(message_id: str) -> str:
    return dumps(message_id)


# Spool entries: a one-element list, so the spool shares the outbox's queue code.


def encode_spool_entry(entry: SpoolEntry, now: datetime) -> list[str]:
    return [dumps({
        "lane": entry.lane, "binding": entry.binding, "params": entry.params,
        "created_at": to_micros(entry.created_at or now),
    })]  # fmt: skip


def decode_spool_entry(elements: Sequence[str], entry_id: int) -> SpoolEntry:
    data = loads(elements[0])
    return SpoolEntry(
        lane=data["lane"], binding=data["binding"], params=data["params"],
        created_at=_moment(data["created_at"]), id=entry_id,
    )  # fmt: skip


# The loop guard: a hash, so a hold can count `held_over` with HINCRBY inside a script.


def encode_guard(state: LaneGuard) -> dict[str, str]:
    data = state.to_json()
    return {
        "recent": dumps(data["recent"]),
        "paused": "1" if data["paused"] else "0",
        "held_over": str(data["held_over"]),
    }


def decode_guard(fields: Mapping[str, str]) -> LaneGuard:
    return LaneGuard.from_json({
        "recent": loads(fields.get("recent") or "[]"),
        "paused": fields.get("paused") == "1",
        "held_over": int(fields.get("held_over") or 0),
    })  # fmt: skip
