"""The memory store: every concern in process memory, gone when the process ends."""

from __future__ import annotations

from bridge.store.base import Store
from bridge.store.memory.conversations import MemoryConversationStore
from bridge.store.memory.pauses import MemoryPauseStore
from bridge.store.memory.relay import (
    MemoryLeaseStore,
    MemoryLoopGuardStore,
    MemoryMessageMapStore,
    MemoryOutboxStore,
    MemorySeenStore,
    MemorySpoolStore,
    MemoryStreamStore,
)
from bridge.store.pacing import MemoryPacingStore


class MemoryStore(Store):
    """A store for tests and one-off runs; `memory://` opens a fresh, empty one."""

    def __init__(self) -> None:
        self.conversations = MemoryConversationStore()
        self.seen = MemorySeenStore()
        self.message_map = MemoryMessageMapStore()
        self.leases = MemoryLeaseStore()
        self.outbox = MemoryOutboxStore(self.seen, self.message_map, self.leases)
        self.spool = MemorySpoolStore(self.seen)
        self.loop_guard = MemoryLoopGuardStore(self.seen, self.outbox)
        self.streams = MemoryStreamStore()
        self.pauses = MemoryPauseStore()
        self.pacing = MemoryPacingStore()

    async def close(self) -> None:
        """Nothing to release; kept so callers treat every store alike."""


__all__ = ["MemoryStore"]
