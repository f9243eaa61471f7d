"""The tracker: applies the state machine to a store, one atomic store update per event.

Every event becomes a pure change (`bridge.tracking.transitions`) handed to
`ConversationStore.update`, which applies it atomically; that is why concurrent `track` calls
on one request id cannot lose an update and the tracker needs no locks of its own.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from datetime import UTC, datetime, timedelta
from functools import partial

from bridge.store import Conversation, ConversationChange, Store
from bridge.tracking import transitions
from bridge.tracking.errors import UnknownConversation
from bridge.tracking.messages import TrackedMessage, check_message
from bridge.tracking.scope import same_chat, scoped_id
from bridge.tracking.vocabulary import BRIDGE, STATUSES, resolve_timeouts

log = logging.getLogger(__name__)

SWEEP_BATCH = 10
"""Expiries the sweep closes between two yields to the event loop. A batch's closes run at
once and SQLite commits them together (about 1 ms for ten; a commit per close wrote so much
WAL that a 1,000-expiry sweep reached the loop's own checkpoint, a 30 ms stall), leaving
room under the 10 ms a chat may wait for the notices the relay posts per batch and for a
shared machine's noise, whatever the number due."""


def utc_now(now: datetime | None = None) -> datetime:
    """`now` checked and in UTC, or the current time; naive datetimes are refused."""
    if now is None:
        return datetime.now(UTC)
    if now.__class__ is datetime and now.tzinfo is UTC:
        return now  # what astimezone(UTC) would return a copy of
    if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"expected a timezone-aware datetime, got {now!r}")
    return now.astimezone(UTC)


OnChange = Callable[[Conversation], None]
"""Told of every conversation an update changed (synchronously; it must not block)."""


class Tracker:
    """Tracks protocol conversations: status, owner, depth, history and deadlines."""

    def __init__(
        self,
        store: Store,
        timeouts: Mapping[str, timedelta] | None = None,
        on_change: OnChange | None = None,
    ) -> None:
        self._conversations = store.conversations
        self.timeouts = resolve_timeouts(timeouts)
        self.on_change = on_change
        """A watcher (the relay's event bus): changes are told, never waited on."""

    async def track(
        self, message: TrackedMessage, now: datetime | None = None, chat: str | None = None
    ) -> Conversation:
        """Record a protocol message; seeing the identical message again changes nothing.

        In the chat that used its id first the message's id is the key; in any other chat
        the id is scoped to that chat (bridge.tracking.scope). Whose a record is, is decided
        inside the store's atomic update, so two instances cannot both take an id."""
        check_message(message)
        change = partial(
            transitions.on_message,
            message=message,
            now=utc_now(now),
            chat=chat,
            timeouts=self.timeouts,
        )
        updated = await self._conversations.update(message.request_id, change)
        assert updated.conversation is not None  # on_message always yields a record
        if not same_chat(updated.conversation.chat, chat):
            key = scoped_id(message.request_id, chat)
            updated = await self._conversations.update(key, partial(change, key=key))
            assert updated.conversation is not None
        if not updated.changed:
            log.debug("already tracked: %s %s", message.type, message.request_id)
        elif self.on_change is not None:
            self.on_change(updated.conversation)
        return updated.conversation

    async def answer(
        self, request_id: str, from_: str, text: str, now: datetime | None = None
    ) -> Conversation:
        """Answer an open or clarifying conversation outside the protocol; it is open again."""
        change = partial(
            transitions.on_answer,
            request_id=request_id,
            from_=from_,
            text=text,
            now=utc_now(now),
            timeouts=self.timeouts,
        )
        return await self._updated(request_id, change)

    async def close(
        self,
        request_id: str,
        status: str,
        reason: str,
        now: datetime | None = None,
        by: str = BRIDGE,
    ) -> Conversation:
        """End a conversation from the relay (e.g. it answered `failed` at the depth limit)."""
        change = partial(
            transitions.on_close,
            request_id=request_id,
            status=status,
            reason=reason,
            now=utc_now(now),
            by=by,
        )
        return await self._updated(request_id, change)

    async def get(self, request_id: str) -> Conversation | None:
        """The conversation under this store key (as the dashboard and `list` show it)."""
        return await self._conversations.get(request_id)

    async def get_in(self, chat: str, request_id: str) -> Conversation | None:
        """The conversation a RequestId names when it is written in `chat`: its own, never
        another chat's that happens to use the same id."""
        conversation = await self._conversations.get(request_id)
        if conversation is not None and same_chat(conversation.chat, chat):
            return conversation
        return await self._conversations.get(scoped_id(request_id, chat))

    async def list(
        self,
        status: str | Collection[str] | None = None,
        from_: str | None = None,
        to: str | None = None,
        chat: str | None = None,
    ) -> builtins.list[Conversation]:
        """Conversations matching every given filter, oldest first."""
        statuses = {status} if isinstance(status, str) else status
        if statuses is not None:
            unknown = set(statuses) - STATUSES
            if unknown:
                raise ValueError(
                    f"unknown status {', '.join(sorted(unknown))};"
                    f" expected one of {', '.join(sorted(STATUSES))}"
                )
        return await self._conversations.find(statuses=statuses, from_=from_, to=to, chat=chat)

    async def sweep(self, now: datetime | None = None) -> builtins.list[Conversation]:
        """Close every conversation whose deadline has passed; return the ones it closed.

        A conversation waiting on a reply becomes `timeout`; a BROADCAST past its expiry
        becomes `expired` (it ran its course, so the relay need not post a timeout notice).
        The work is done in `sweep_batches`, so the event loop runs between batches.
        """
        closed: builtins.list[Conversation] = []
        async for batch in self.sweep_batches(now):
            closed.extend(batch)
        return closed

    async def sweep_batches(
        self, now: datetime | None = None, batch_size: int = SWEEP_BATCH
    ) -> AsyncIterator[builtins.list[Conversation]]:
        """`sweep`, one batch of at most `batch_size` expiries at a time.

        The stores run inline on the event loop (SQLite) or answer without suspending
        (memory), so closing thousands of expiries in one go would stall every chat for as
        long. Instead each batch asks the deadline index for the next `batch_size` ids, closes
        them, hands the closed ones to the caller (who may post a notice for each), and then
        yields to the event loop before the next batch. A conversation whose deadline moved
        meanwhile is left alone; one that stays due without closing (a stale index entry) is
        tried once, then skipped, so the sweep always ends.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size!r}")
        now = utc_now(now)
        deadline_passed = partial(transitions.on_deadline, now=now)
        tried: set[str] = set()
        unclosed = 0
        while True:
            asked = batch_size + unclosed  # the unclosed ones may come first again
            due = await self._conversations.due(now, limit=asked)
            fresh = [request_id for request_id in due if request_id not in tried][:batch_size]
            tried.update(fresh)
            closed: builtins.list[Conversation] = []
            # The batch's updates at once: a store that groups the writes of one turn of the
            # loop (SQLite) commits them together; one that waits on the network (Redis)
            # overlaps the waits. One that fails does not hide the others' closes: they are
            # handed out (their notices posted) before its error ends the sweep.
            batch = await asyncio.gather(
                *(self._conversations.update(request_id, deadline_passed) for request_id in fresh),
                return_exceptions=True,
            )
            failure: BaseException | None = None
            for updated in batch:
                if isinstance(updated, BaseException):
                    failure = failure or updated
                elif updated.changed and updated.conversation is not None:
                    closed.append(updated.conversation)
                    if self.on_change is not None:
                        self.on_change(updated.conversation)
                else:
                    unclosed += 1
            if closed:
                yield closed
            if failure is not None:
                raise failure
            if len(due) < asked or not fresh:
                return
            await asyncio.sleep(0)  # let the loop serve everyone else between batches

    async def cleanup(self, older_than: timedelta, now: datetime | None = None) -> int:
        """Remove finished conversations last updated more than `older_than` ago."""
        if not isinstance(older_than, timedelta) or older_than < timedelta(0):
            raise ValueError(f"older_than must be a non-negative timedelta, got {older_than!r}")
        return await self._conversations.remove_finished(utc_now(now) - older_than)

    async def _updated(self, request_id: str, change: ConversationChange) -> Conversation:
        updated = await self._conversations.update(request_id, change)
        if updated.conversation is None:
            raise UnknownConversation(request_id)
        if updated.changed and self.on_change is not None:
            self.on_change(updated.conversation)
        return updated.conversation
