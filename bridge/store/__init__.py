"""Every piece of state the bridge keeps, behind one interface.

`open_store(url)` gives a `Store` (memory, SQLite or Redis); each concern is an attribute of
it (`store.conversations`, `store.outbox`, …). Adding a concern is described in docs/tracking.md.
"""

from bridge.store.base import (
    ConversationChange,
    ConversationPage,
    ConversationStore,
    Store,
    Updated,
)
from bridge.store.errors import TRANSIENT_ERRORS, transient
from bridge.store.opening import (
    SUPPORTED,
    OpeningStore,
    StoreUnavailable,
    StoreUrl,
    open_store,
    parse_store_url,
)
from bridge.store.records import Conversation, HistoryEntry

__all__ = [
    "SUPPORTED",
    "TRANSIENT_ERRORS",
    "Conversation",
    "ConversationChange",
    "ConversationPage",
    "ConversationStore",
    "HistoryEntry",
    "OpeningStore",
    "Store",
    "StoreUnavailable",
    "StoreUrl",
    "Updated",
    "open_store",
    "parse_store_url",
    "transient",
]
