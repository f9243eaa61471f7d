"""Conversations in Redis: one list each ([record, history entry, …]) and index keys.

One key per conversation means one atomic read (LRANGE) of the record with its history, one
key to WATCH, and an update that only rewrites the record (LSET 0) and appends the new
entries (RPUSH). The indexes (`indexes.py`) are written in the same MULTI as the record, so
they never disagree with it. Big indexes are read in bounded chunks (ZSCAN, paged ZRANGE),
so no command holds the server long however many conversations there are.

`page` walks the smallest index that holds every match (by ZCARD: the union of the wanted
statuses' zsets, the chat's or the bot's zset, else `created`) backwards from its cursor
(`listing.py`), checks the other filters on the records (LINDEX 0: the record without its
history) and reads the histories of the page's conversations only. Its cost is the members
walked until the page is full: `limit + 1` with one filter or none, more when the others
reject members (at worst the smallest index). `counts` is one HGETALL of a count hash.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Iterable
from contextlib import aclosing
from datetime import datetime

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from bridge.store.base import (
    ConversationChange,
    ConversationPage,
    ConversationStore,
    Updated,
    check_replacement,
)
from bridge.store.micros import to_micros
from bridge.store.paging import PageQuery, Place, encode_cursor
from bridge.store.records import Conversation
from bridge.store.redis.codec import decode_conversation, encode_entry, encode_record
from bridge.store.redis.concern import RedisConcern
from bridge.store.redis.indexes import reindex
from bridge.store.redis.keys import Keys
from bridge.store.redis.listing import newest_first
from bridge.store.redis.optimistic import Plan, Turns, optimistic
from bridge.store.redis.scripts import Scripts

# Members read per ZSCAN/ZRANGE call, and conversations fetched per pipeline.
CHUNK = 500
# Finished conversations deleted per transaction by `remove_finished` (each one is watched).
REMOVE_BATCH = 100


def _indexed(conversation: Conversation) -> dict[str, str | None]:
    return {
        "status": conversation.status, "from": conversation.from_,
        "to": conversation.to, "chat": conversation.chat,
    }  # fmt: skip


class RedisConversationStore(RedisConcern, ConversationStore):
    __slots__ = ("_turns",)

    def __init__(self, redis: Redis, scripts: Scripts, keys: Keys) -> None:
        super().__init__(redis, scripts, keys)
        self._turns = Turns()

    async def get(self, request_id: str) -> Conversation | None:
        return decode_conversation(await self._redis.lrange(self._keys.conversation(request_id),
                                                            0, -1))

    async def update(self, request_id: str, change: ConversationChange) -> Updated:
        key = self._keys.conversation(request_id)

        async def attempt(pipe: Pipeline) -> Plan[Updated]:
            current = decode_conversation(await pipe.lrange(key, 0, -1))
            new = change(current)
            if new is None:
                return Plan(None, lambda _: Updated(current, False))
            check_replacement(request_id, current, new)

            async def write(pipe: Pipeline) -> None:
                await self._write(pipe, current, new)

            return Plan(write, lambda _: Updated(new, True))

        return await optimistic(self._redis, [key], attempt, self._turns)

    async def _write(
        self, pipe: Pipeline, current: Conversation | None, new: Conversation
    ) -> None:
        key = self._keys.conversation(new.request_id)
        start = len(current.history) if current is not None else 0
        added = [encode_entry(entry) for entry in new.history[start:]]
        if current is None:
            pipe.rpush(key, encode_record(new), *added)
        else:
            pipe.lset(key, 0, encode_record(new))
            if added:
                pipe.rpush(key, *added)
        await reindex(pipe, self._keys, self._scripts, new.request_id, current, new)

    async def find(
        self,
        *,
        statuses: Collection[str] | None = None,
        from_: str | None = None,
        to: str | None = None,
        chat: str | None = None,
    ) -> list[Conversation]:
        wanted: dict[str, Collection[str]] = {}
        if statuses is not None:
            wanted["status"] = set(statuses)
            if not wanted["status"]:
                return []
        for field, value in (("from", from_), ("to", to), ("chat", chat)):
            if value is not None:
                wanted[field] = {value}
        found: dict[str, Conversation] = {}
        async for chunk in self._chunks(await self._candidates(wanted)):
            for conversation in await self._load(chunk):
                if conversation is not None and all(
                    _indexed(conversation)[field] in values for field, values in wanted.items()
                ):
                    found[conversation.request_id] = conversation
        return sorted(found.values(), key=lambda c: (c.created_at, c.request_id))

    async def _candidates(self, wanted: dict[str, Collection[str]]) -> list[str]:
        """The index keys whose union holds every match: the filter with the fewest ids (the
        records are checked against every filter afterwards), or every conversation."""
        if not wanted:
            return [self._keys.created]
        options = [
            [self._keys.by_field(field, value) for value in values]
            for field, values in wanted.items()
        ]
        async with self._redis.pipeline(transaction=False) as pipe:
            for option in options:
                for key in option:
                    pipe.zcard(key)
            sizes = iter(await pipe.execute())
        totals = [sum(next(sizes) for _ in option) for option in options]
        return options[totals.index(min(totals))]

    async def _chunks(self, keys: Iterable[str]) -> AsyncIterator[list[str]]:
        """Members of the given index zsets, CHUNK at a time, each once."""
        given: set[str] = set()
        chunk: list[str] = []
        for key in keys:
            async for request_id, _ in self._redis.zscan_iter(key, count=CHUNK):
                if request_id in given:
                    continue
                given.add(request_id)
                chunk.append(request_id)
                if len(chunk) >= CHUNK:
                    yield chunk
                    chunk = []
        if chunk:
            yield chunk

    async def _load(self, request_ids: list[str]) -> list[Conversation | None]:
        async with self._redis.pipeline(transaction=False) as pipe:
            for request_id in request_ids:
                pipe.lrange(self._keys.conversation(request_id), 0, -1)
            return [decode_conversation(elements) for elements in await pipe.execute()]

    async def _records(self, request_ids: list[str]) -> list[Conversation | None]:
        """The records without their history (the first element of each list)."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for request_id in request_ids:
                pipe.lindex(self._keys.conversation(request_id), 0)
            replies = await pipe.execute()
        return [decode_conversation([text]) if text is not None else None for text in replies]

    async def _page(self, query: PageQuery) -> ConversationPage:
        wanted: dict[str, Collection[str]] = {}
        for field, values in (
            ("status", query.statuses),
            ("chat", None if query.chat is None else {query.chat}),
            ("bot", None if query.bot is None else {query.bot}),
        ):
            if values is not None:
                wanted[field] = values
        walked = await self._candidates(wanted)
        needed = query.limit + 1  # one more: is there an older page?
        matched: list[Place] = []
        given: set[str] = set()
        steps = newest_first(self._redis, walked, query.after, needed, CHUNK)
        async with aclosing(steps):
            async for step in steps:
                fresh = [at for at in step if at[1] not in given]  # moved between two keys
                given.update(request_id for _, request_id in fresh)
                if len(wanted) > 1:  # the walked index checked one filter, the records the rest
                    records = await self._records([request_id for _, request_id in fresh])
                    fresh = [at for at, record in zip(fresh, records, strict=True)
                             if record is not None and query.matches(record)]  # fmt: skip
                matched += fresh
                if len(matched) >= needed:
                    break
        shown = matched[: query.limit]
        loaded = await self._load([request_id for _, request_id in shown])
        # Checked again: a conversation may have changed since its index entry was read.
        items = [c for c in loaded if c is not None and query.matches(c)]
        more = len(matched) > query.limit
        return ConversationPage(items, encode_cursor(shown[-1]) if more else None)

    async def _counts(self, query: PageQuery) -> dict[str, int]:
        counted = await self._redis.hgetall(self._keys.count(chat=query.chat, bot=query.bot))
        return {status: int(count) for status, count in counted.items()}

    async def due(self, now: datetime, limit: int | None = None) -> list[str]:
        cut = to_micros(now)
        due: dict[str, None] = {}
        offset = 0
        while limit is None or len(due) < limit:
            page = CHUNK if limit is None else min(CHUNK, limit - len(due))
            ids = await self._redis.zrange(
                self._keys.deadlines, "-inf", cut, byscore=True, offset=offset, num=page
            )
            due.update(dict.fromkeys(ids))
            if len(ids) < page:
                break
            offset += len(ids)
        return list(due)

    async def remove_finished(self, updated_before: datetime) -> int:
        cut = f"({to_micros(updated_before)}"
        removed = 0
        while True:
            ids = await self._redis.zrange(
                self._keys.finished, "-inf", cut, byscore=True, offset=0, num=REMOVE_BATCH
            )
            deleted, dropped = await self._remove(ids, updated_before) if ids else (0, 0)
            removed += deleted
            if not dropped:  # nothing left, or nothing this batch could take out of the index
                return removed

    async def _remove(self, request_ids: list[str], updated_before: datetime) -> tuple[int, int]:
        """Delete those of `request_ids` that are still finished and old, in one transaction
        (a conversation reopened meanwhile by another instance is left alone); returns how
        many were deleted and how many index entries went."""
        keys = [self._keys.conversation(request_id) for request_id in request_ids]

        async def attempt(pipe: Pipeline) -> Plan[tuple[int, int]]:
            loaded = dict(zip(request_ids, await self._load(request_ids), strict=True))
            doomed = [
                conversation
                for conversation in loaded.values()
                if conversation is not None
                and conversation.finished
                and conversation.updated_at < updated_before
            ]
            # An id whose record is gone is a stale index entry: drop it, or it would come
            # back in every batch. (A record changed meanwhile moved its own index entries.)
            orphans = [request_id for request_id, found in loaded.items() if found is None]
            if not doomed and not orphans:
                return Plan(None, lambda _: (0, 0))

            async def write(pipe: Pipeline) -> None:
                for conversation in doomed:
                    pipe.delete(self._keys.conversation(conversation.request_id))
                    await reindex(
                        pipe, self._keys, self._scripts, conversation.request_id, conversation, None
                    )
                if orphans:
                    pipe.zrem(self._keys.finished, *orphans)

            return Plan(write, lambda _: (len(doomed), len(doomed) + len(orphans)))

        return await optimistic(self._redis, keys, attempt)
