"""The one store interface, organised by concern.

A `Store` is a bundle of concern stores (today `conversations`; later `seen`, `outbox`,
`message_map`), each with a few coarse operations such as "apply this change atomically" or
"which deadlines are due". Coarse operations are what let memory, SQLite and Redis implement
the same interface naturally (a Redis deadline index is a sorted set; an atomic change is a
WATCH/MULTI retry), so the code above a store never changes when the backend does.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection
from datetime import datetime
from types import TracebackType
from typing import NamedTuple, Self

from bridge.store.leases import LeaseStore
from bridge.store.loop_guard import LoopGuardStore
from bridge.store.pacing import PacingStore
from bridge.store.paging import PageQuery, page_query, positive
from bridge.store.pauses import PauseStore
from bridge.store.records import Conversation
from bridge.store.relay import MessageMapStore, OutboxStore, SeenStore, SpoolStore
from bridge.store.streams import StreamStore

ConversationChange = Callable[[Conversation | None], Conversation | None]
"""Given the stored conversation (or None), return its replacement, or None for no change.

A change must be a pure function of its argument: a store may call it more than once (a
Redis store retries it when another instance wrote the same key meanwhile). It may raise to
abort; nothing is written then. The replacement's history must extend the stored history:
stores only write the entries past the old length.
"""


class Updated(NamedTuple):
    """What `ConversationStore.update` left in the store, and whether it wrote anything."""

    conversation: Conversation | None
    changed: bool


class ConversationPage(NamedTuple):
    """One page of conversations, newest first, and where the next (older) page starts."""

    items: list[Conversation]
    """With their history, newest first."""
    next_cursor: str | None
    """Opaque; None when there is no older conversation."""


class ConversationStore(ABC):
    """Tracked conversations, their history and their deadline index."""

    @abstractmethod
    async def get(self, request_id: str) -> Conversation | None:
        """The conversation with its full history, or None."""

    @abstractmethod
    async def update(self, request_id: str, change: ConversationChange) -> Updated:
        """Apply `change` to one conversation atomically with respect to every other update."""

    @abstractmethod
    async def find(
        self,
        *,
        statuses: Collection[str] | None = None,
        from_: str | None = None,
        to: str | None = None,
        chat: str | None = None,
    ) -> list[Conversation]:
        """Conversations matching every given filter, oldest first, with their history."""

    async def page(
        self,
        *,
        statuses: Collection[str] | None = None,
        chat: str | None = None,
        bot: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> ConversationPage:
        """Up to `limit` (1-500) conversations matching every given filter, newest first.

        Order is `(created_at, request_id)` descending. `chat` is the lane key in
        `Conversation.chat`; `bot` matches `from_`, `to` or `original_from`, ignoring case.
        `cursor` is a previous page's `next_cursor`: the page goes on after that page's last
        conversation, so conversations created since never repeat or hide older ones. A
        malformed cursor or a limit out of range is a ValueError (`bridge.store.paging`
        checks both, here, for every backend).
        """
        query = page_query(statuses=statuses, chat=chat, bot=bot, cursor=cursor, limit=limit)
        if query.nothing:
            return ConversationPage([], None)
        return await self._page(query)

    @abstractmethod
    async def _page(self, query: PageQuery) -> ConversationPage:
        """One page for a checked query that may match something. Implementations walk an
        index in order and read the histories of the page's conversations only, never
        every conversation."""

    async def counts(self, *, chat: str | None = None, bot: str | None = None) -> dict[str, int]:
        """How many conversations there are per status, under the same filters as `page`
        (statuses with none left out)."""
        return positive(await self._counts(page_query(chat=chat, bot=bot)))

    @abstractmethod
    async def _counts(self, query: PageQuery) -> dict[str, int]:
        """Status → number for the query's chat and bot filters (zeros allowed)."""

    @abstractmethod
    async def due(self, now: datetime, limit: int | None = None) -> list[str]:
        """Request ids whose deadline is at or before `now`, earliest deadline first.

        Implementations answer from a deadline index, never by scanning every conversation.
        """

    @abstractmethod
    async def remove_finished(self, updated_before: datetime) -> int:
        """Delete finished conversations (no deadline) last updated before the cut-off."""


class Store(ABC):
    """Every piece of state the bridge keeps, one attribute per concern.

    Use it as `async with open_store(url) as store:` or `store = await open_store(url)`
    followed by `await store.close()`.
    """

    conversations: ConversationStore
    seen: SeenStore
    outbox: OutboxStore
    spool: SpoolStore
    loop_guard: LoopGuardStore
    streams: StreamStore
    leases: LeaseStore
    message_map: MessageMapStore
    pauses: PauseStore
    pacing: PacingStore

    @abstractmethod
    async def close(self) -> None:
        """Release the backend; the store must not be used afterwards."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


def check_replacement(request_id: str, current: Conversation | None, new: Conversation) -> None:
    """Refuse a change that would corrupt the record, whatever the backend."""
    if new.request_id != request_id:
        raise ValueError(f"a change for {request_id!r} returned {new.request_id!r}")
    if current is not None and len(new.history) < len(current.history):
        raise ValueError(f"a change for {request_id!r} dropped history entries")
