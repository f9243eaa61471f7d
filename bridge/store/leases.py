"""Leases: work that exactly one bridge instance may do at a time, with fencing.

Polling one Telegram token, holding one Slack socket or Discord shard, sending one chat's
outbox, sweeping timeouts: each runs under a named lease. The holder renews it well inside
its TTL; if the holder dies (kill -9) the lease simply expires and another instance takes
it. Every new grant carries a larger fencing token, so work a stale holder still tries to
finish can be told apart from the new holder's (a store write can check the token).

A write guarded by a lease takes the grant as `fence`: the store refuses it (`StaleLease`),
in the same atomic step as the write, once a newer grant of that lease exists. Expiry alone
does not refuse it: until someone else is granted the lease nobody else can be doing the work.

Time is the store's business: memory and SQLite read the wall clock, Redis its own
expiries, so instances need not agree on the time of day to within more than the TTL.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Lease:
    name: str
    holder: str
    token: int
    """Fencing token: larger for every new grant of the same lease."""


class StaleLease(Exception):
    """A guarded write carried a fencing token older than its lease's newest grant: its
    writer lost the lease (paused past the TTL, say) and another instance does the work now.
    Nothing of the write was done."""

    def __init__(self, fence: Lease, newest: int) -> None:
        super().__init__(f"lease {fence.name}: token {fence.token} is stale (newest {newest})")
        self.fence = fence
        self.newest = newest


class LeaseStore(ABC):
    @abstractmethod
    async def acquire(self, name: str, holder: str, ttl: float) -> Lease | None:
        """Grant the lease to `holder` for `ttl` seconds if it is free or expired, or extend
        it if `holder` has it already (same token); None while another holder has it."""

    @abstractmethod
    async def take_over(
        self, name: str, dead_holder: str, holder: str, ttl: float
    ) -> Lease | None:
        """Grant the lease to `holder` (a new token) if `dead_holder` still has it — for a
        holder known to be dead before its TTL ran out; None if someone else has it."""

    @abstractmethod
    async def renew(self, lease: Lease, ttl: float) -> bool:
        """Extend a held lease; False if it was lost (expired and taken, or released)."""

    @abstractmethod
    async def release(self, lease: Lease) -> None:
        """Give the lease up at once (an orderly stop), if it is still ours."""

    @abstractmethod
    async def holder(self, name: str) -> str | None:
        """Who holds the lease now (None when free or expired)."""


def wall_clock() -> float:
    return time.time()
