"""Durable tracking of text-protocol conversations (status, depth, history, timeouts).

`Tracker(await open_store(url))` is the entry point; docs/tracking.md has the state machine.
"""

from bridge.store import Conversation, HistoryEntry, open_store
from bridge.tracking.errors import ConversationClosed, TrackingError, UnknownConversation
from bridge.tracking.messages import TrackedMessage
from bridge.tracking.tracker import Tracker
from bridge.tracking.vocabulary import (
    ACTIVE_STATUSES,
    DEFAULT_TIMEOUTS,
    FINISHED_STATUSES,
    STATUSES,
)

__all__ = [
    "ACTIVE_STATUSES",
    "DEFAULT_TIMEOUTS",
    "FINISHED_STATUSES",
    "STATUSES",
    "Conversation",
    "ConversationClosed",
    "HistoryEntry",
    "TrackedMessage",
    "Tracker",
    "TrackingError",
    "UnknownConversation",
    "open_store",
]
