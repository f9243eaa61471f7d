"""The text a bot has streamed so far, per run, in the store.

Deltas are increments. Two deliveries of one run may reach two bridge instances, or one
before a crash and one after it, so each delta is kept under its `seq` and the text so far
is the deltas in `seq` order: appending is idempotent (a replayed delta changes nothing) and
no instance needs to have seen the earlier ones.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime


class StreamStore(ABC):
    @abstractmethod
    async def append(self, run_id: str, seq: int, text: str, now: datetime) -> str:
        """Keep delta `seq` of the run; return the run's text so far."""

    @abstractmethod
    async def take(self, run_id: str) -> str:
        """The run's whole streamed text, forgotten as it is returned (the run is over)."""

    @abstractmethod
    async def prune(self, before: datetime) -> int:
        """Forget runs whose last delta is older than the cut-off (bots that never ended)."""
