"""Paging conversations newest first: the filters, the order and the cursor, for every store.

The dashboard lists conversations a page at a time. Each backend answers from its own
indexes, but what a page means lives here once: the order `(created_at, request_id)`
descending, what each filter matches, the limit's bounds and the cursor's format. A cursor
names the last conversation of a page by its place in that order (not by an offset), so
conversations created after it was handed out never shift the pages that follow it.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Collection
from dataclasses import dataclass

from bridge.store.micros import to_micros
from bridge.store.records import Conversation

MAX_LIMIT = 500
MAX_CURSOR_LENGTH = 4096
"""Longer is no cursor a store handed out (request ids are short); refused unread."""

Place = tuple[int, str]
"""A conversation's place in the order: `(created_at in µs, request_id)`."""

_MICROS = re.compile(r"-?\d{1,20}")


def place(conversation: Conversation) -> Place:
    return (to_micros(conversation.created_at), conversation.request_id)


def bot_key(name: str) -> str:
    """A bot name as the `bot` filter compares it: case-insensitively, as the hub does."""
    return name.casefold()


def bot_keys(conversation: Conversation) -> frozenset[str]:
    """The bots a conversation is about (`from_`, `to`, `original_from`), folded."""
    names = (conversation.from_, conversation.to, conversation.original_from)
    return frozenset(bot_key(name) for name in names if name is not None)


def encode_cursor(after: Place) -> str:
    micros, request_id = after
    return base64.urlsafe_b64encode(f"{micros}:{request_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> Place:
    """The place a cursor names; ValueError saying why for anything a store did not make."""
    if not isinstance(cursor, str) or not cursor or len(cursor) > MAX_CURSOR_LENGTH:
        raise ValueError(f"malformed cursor {_shown(cursor)}: not a cursor a page returned")
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        micros, colon, request_id = raw.decode().partition(":")
    except ValueError:  # not base64 (binascii.Error), not UTF-8
        raise ValueError(
            f"malformed cursor {_shown(cursor)}: not a cursor a page returned"
        ) from None
    if not colon or not _MICROS.fullmatch(micros):
        raise ValueError(f"malformed cursor {_shown(cursor)}: not a cursor a page returned")
    return (int(micros), request_id)


def _shown(cursor: object) -> str:
    text = repr(cursor)
    return text if len(text) <= 80 else f"{text[:77]}..."


@dataclass(frozen=True, slots=True)
class PageQuery:
    """A checked page request: the filters (combined with AND), where it starts, how long."""

    statuses: frozenset[str] | None = None
    chat: str | None = None
    bot: str | None = None
    """Folded (`bot_key`)."""
    after: Place | None = None
    """The place of the previous page's last conversation; None for the newest page."""
    limit: int = 50

    @property
    def nothing(self) -> bool:
        """No conversation can match (an empty collection of statuses)."""
        return self.statuses is not None and not self.statuses

    def matches(self, conversation: Conversation) -> bool:
        """Does the conversation pass every filter (not the cursor)?"""
        return (
            (self.statuses is None or conversation.status in self.statuses)
            and (self.chat is None or conversation.chat == self.chat)
            and (self.bot is None or self.bot in bot_keys(conversation))
        )

    def older(self, at: Place) -> bool:
        """Does a conversation at this place come after the cursor (or is there none)?"""
        return self.after is None or at < self.after


def page_query(
    *,
    statuses: Collection[str] | None = None,
    chat: str | None = None,
    bot: str | None = None,
    cursor: str | None = None,
    limit: int = 50,
) -> PageQuery:
    """Check `ConversationStore.page`'s arguments (ValueError saying which is wrong)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be a whole number from 1 to {MAX_LIMIT}, got {limit!r}")
    if isinstance(statuses, str):
        raise ValueError(f"statuses is a collection of statuses, got the string {statuses!r}")
    return PageQuery(
        statuses=None if statuses is None else frozenset(statuses),
        chat=chat,
        bot=None if bot is None else bot_key(bot),
        after=None if cursor is None else decode_cursor(cursor),
        limit=limit,
    )


def positive(counts: dict[str, int]) -> dict[str, int]:
    """Counts by status without the zeros, in status order (what `counts` returns)."""
    return {status: counts[status] for status in sorted(counts) if counts[status] > 0}
