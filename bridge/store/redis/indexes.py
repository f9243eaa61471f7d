"""Which Redis indexes a conversation is in, and the writes that move it between them.

They are queued in the MULTI that writes the record, so no index ever disagrees with it:

- `convs:created` and `convs:by-<field>:<value>` (status, from, to, chat, and bot: each
  casefolded name among from, to and original_from) are zsets scored by created_at (µs):
  `find` reads the smallest that holds every match, and `page` walks one backwards from its
  cursor (`listing.py`). A score orders like `(created_at, request_id)`: Redis orders members
  of equal score by their bytes, as Python orders their strings.
- `convs:deadline` (by deadline) and `convs:finished` (by updated_at) serve `due` and
  `remove_finished`.
- `convs:count`, `convs:count-chat:<chat>`, `convs:count-bot:<bot>` and `convs:count-pair:…`
  are hashes status -> how many conversations, moved by the COUNT script, so `counts` reads
  one small hash whatever the number stored.
"""

from __future__ import annotations

from redis.asyncio.client import Pipeline

from bridge.store.micros import to_micros
from bridge.store.paging import bot_keys
from bridge.store.records import Conversation
from bridge.store.redis.keys import Keys
from bridge.store.redis.scripts import Scripts


def ordered_keys(keys: Keys, conversation: Conversation) -> set[str]:
    """The zsets by created_at that hold the conversation."""
    found = {keys.created}
    for field, value in (
        ("status", conversation.status), ("from", conversation.from_),
        ("to", conversation.to), ("chat", conversation.chat),
    ):  # fmt: skip
        if value is not None:
            found.add(keys.by_field(field, value))
    found.update(keys.by_field("bot", bot) for bot in bot_keys(conversation))
    return found


def count_keys(keys: Keys, conversation: Conversation) -> set[str]:
    """The count hashes the conversation is counted in."""
    chat, bots = conversation.chat, bot_keys(conversation)
    found = {keys.count(), *(keys.count(bot=bot) for bot in bots)}
    if chat is not None:
        found.add(keys.count(chat=chat))
        found.update(keys.count(chat=chat, bot=bot) for bot in bots)
    return found


async def reindex(
    pipe: Pipeline,
    keys: Keys,
    scripts: Scripts,
    request_id: str,
    old: Conversation | None,
    new: Conversation | None,
) -> None:
    """Queue the index writes that take the conversation from `old` to `new` (None: absent)."""
    was = ordered_keys(keys, old) if old is not None else set()
    now = ordered_keys(keys, new) if new is not None else set()
    for key in sorted(was - now):
        pipe.zrem(key, request_id)
    if new is not None:
        moved = old is None or old.created_at != new.created_at
        score = {request_id: to_micros(new.created_at)}
        for key in sorted(now if moved else now - was):
            pipe.zadd(key, score)
    await _recount(pipe, keys, scripts, old, new)
    if new is None:
        pipe.zrem(keys.deadlines, request_id)
        pipe.zrem(keys.finished, request_id)
        return
    if new.deadline is not None:
        pipe.zadd(keys.deadlines, {request_id: to_micros(new.deadline)})
        if old is not None and old.deadline is None:
            pipe.zrem(keys.finished, request_id)
    else:
        pipe.zadd(keys.finished, {request_id: to_micros(new.updated_at)})
        if old is not None and old.deadline is not None:
            pipe.zrem(keys.deadlines, request_id)


async def _recount(
    pipe: Pipeline, keys: Keys, scripts: Scripts, old: Conversation | None, new: Conversation | None
) -> None:
    was = count_keys(keys, old) if old is not None else set()
    now = count_keys(keys, new) if new is not None else set()
    down, up = was, now
    if old is not None and new is not None and old.status == new.status:
        down, up = was - now, now - was  # same status: only the hashes it left or joined
    if down:
        assert old is not None
        await scripts.count(keys=sorted(down), args=[old.status, -1], client=pipe)
    if up:
        assert new is not None
        await scripts.count(keys=sorted(up), args=[new.status, 1], client=pipe)
