"""The text a bot has streamed so far, per run, in the store.

Deltas are increments. Two deliveries of one run may reach two bridge instances, or one
before a crash and one after it, so each delta is kept under its `seq` and the text so far
is the deltas in `seq` order: appending is idempotent (a replayed delta changes nothing) and
no instance needs to have seen the earlier ones.

A run ends once: `take` hands out its text and marks it ended, and a delta of an ended run
is not kept (`append` returns ""). A delta can arrive after its run's final — retried after
a refusal, or replayed to another instance after the one that posted the final died before
acking it — and it must never show a preview again, or edit the finished reply back to it.
The mark lives as long as a run's deltas would (it is pruned with them).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime


class StreamStore(ABC):
    @abstractmethod
    async def append(self, run_id: str, seq: int | None, text: str, now: datetime) -> str:
        """Keep delta `seq` of the run; return the run's text so far ("" once it ended).

        `seq` None (a BCN that does not number a run's outputs): the store numbers the delta
        after the run's others, atomically, so the order is the order the store took them
        in — never a clock of whichever instance received them (clocks of two hosts cannot
        be compared)."""

    @abstractmethod
    async def take(self, run_id: str, now: datetime) -> str:
        """The run's whole streamed text, forgotten as it is returned; the run is marked
        ended, so a late delta of it shows nothing."""

    @abstractmethod
    async def prune(self, before: datetime) -> int:
        """Forget runs whose last delta is older than the cut-off (bots that never ended)."""
