"""Conversations held in process memory, for tests and single-process trials.

Every operation runs without awaiting in the middle, so on one event loop each `update` is
atomic by construction and no lock is needed. Deadlines sit in a heap with lazy deletion: a
superseded entry stays in the heap until it reaches the top, and the heap is rebuilt when
stale entries outnumber live ones. For `page`, every conversation's place in the order
`(created_at, request_id)` sits in a sorted list: a page bisects to its cursor and walks back
from there, so paging through everything costs each conversation once, not once per page.
"""

from __future__ import annotations

import bisect
import heapq
from collections import Counter
from collections.abc import Collection
from datetime import datetime

from bridge.store.base import (
    ConversationChange,
    ConversationPage,
    ConversationStore,
    Updated,
    check_replacement,
)
from bridge.store.paging import PageQuery, Place, encode_cursor, place
from bridge.store.records import Conversation

# Rebuild the heap once it holds this many more entries than twice the live deadlines.
_COMPACT_SLACK = 1024


class MemoryConversationStore(ConversationStore):
    """Conversations in a dict, deadlines in a heap of `(deadline, request_id)`, places in
    a sorted list."""

    __slots__ = ("_by_id", "_deadlines", "_places")

    def __init__(self) -> None:
        self._by_id: dict[str, Conversation] = {}
        self._deadlines: list[tuple[datetime, str]] = []
        self._places: list[Place] = []

    async def get(self, request_id: str) -> Conversation | None:
        return self._by_id.get(request_id)

    async def update(self, request_id: str, change: ConversationChange) -> Updated:
        current = self._by_id.get(request_id)
        new = change(current)
        if new is None:
            return Updated(current, False)
        check_replacement(request_id, current, new)
        self._by_id[request_id] = new
        if current is None or current.created_at != new.created_at:
            if current is not None:
                del self._places[bisect.bisect_left(self._places, place(current))]
            bisect.insort(self._places, place(new))
        if new.deadline is not None and (current is None or current.deadline != new.deadline):
            heapq.heappush(self._deadlines, (new.deadline, request_id))
            self._compact_if_stale()
        return Updated(new, True)

    async def find(
        self,
        *,
        statuses: Collection[str] | None = None,
        from_: str | None = None,
        to: str | None = None,
        chat: str | None = None,
    ) -> list[Conversation]:
        found = [
            conversation
            for conversation in self._by_id.values()
            if (statuses is None or conversation.status in statuses)
            and (from_ is None or conversation.from_ == from_)
            and (to is None or conversation.to == to)
            and (chat is None or conversation.chat == chat)
        ]
        found.sort(key=lambda conversation: conversation.created_at)
        return found

    async def _page(self, query: PageQuery) -> ConversationPage:
        places = self._places
        index = len(places) if query.after is None else bisect.bisect_left(places, query.after)
        found: list[Conversation] = []
        while index > 0 and len(found) <= query.limit:  # one more: is there an older page?
            index -= 1
            conversation = self._by_id[places[index][1]]
            if query.matches(conversation):
                found.append(conversation)
        if len(found) <= query.limit:
            return ConversationPage(found, None)
        items = found[: query.limit]
        return ConversationPage(items, encode_cursor(place(items[-1])))

    async def _counts(self, query: PageQuery) -> dict[str, int]:
        return Counter(c.status for c in self._by_id.values() if query.matches(c))

    async def due(self, now: datetime, limit: int | None = None) -> list[str]:
        # Pop due entries until `limit` live ones are found, drop the stale ones for good
        # (superseded deadlines and duplicates: a deadline set again is pushed again), and
        # push the live ones back: asking is not consuming. The cost follows `limit` and
        # the stale entries met, never the number of conversations due.
        deadlines = self._deadlines
        live: list[tuple[datetime, str]] = []
        seen: set[str] = set()
        while deadlines and deadlines[0][0] <= now and (limit is None or len(live) < limit):
            deadline, request_id = heapq.heappop(deadlines)
            conversation = self._by_id.get(request_id)
            if conversation is None or conversation.deadline != deadline or request_id in seen:
                continue
            seen.add(request_id)
            live.append((deadline, request_id))
        for entry in live:
            heapq.heappush(deadlines, entry)
        return [request_id for _, request_id in live]

    async def remove_finished(self, updated_before: datetime) -> int:
        doomed = [
            request_id
            for request_id, conversation in self._by_id.items()
            if conversation.deadline is None and conversation.updated_at < updated_before
        ]
        for request_id in doomed:
            del self._by_id[request_id]
        if doomed:
            self._places = [at for at in self._places if at[1] in self._by_id]
        return len(doomed)

    def _compact_if_stale(self) -> None:
        if len(self._deadlines) <= 2 * len(self._by_id) + _COMPACT_SLACK:
            return
        self._deadlines = [
            (conversation.deadline, request_id)
            for request_id, conversation in self._by_id.items()
            if conversation.deadline is not None
        ]
        heapq.heapify(self._deadlines)

