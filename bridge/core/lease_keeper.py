"""One way to hold a lease: acquire, renew, ride out a store outage, stop the work first.

Every piece of work only one bridge instance may do at a time (polling a Telegram token, a
Discord shard's gateway, an outbox lane, the spool, the sweep, a command sync) runs under a
named lease (`bridge.store.leases`). They used to keep it each in their own loop, and each
handled a store error differently: one stopped renewing without stopping the poller, one
renewed in a bare task that died on the first error. `LeaseKeeper` is the one loop they all
use now, and it holds to three rules:

- **Renew every third of the TTL; ride out store errors.** A failed renewal is logged once
  per outage and tried again; the work goes on while the last successful renewal is younger
  than the TTL minus a safety `margin`, because until then no other instance can have it.
- **Stop the work before the lease can pass.** When the store refuses a renewal (the lease
  was lost) or the margin is reached without an answer, the guarded work is cancelled and
  its teardown (stop polling, close the gateway) awaited *first*; only then is the lease let
  go. The margin is what that teardown may take, so it must be larger than the work's stop.
  A renewal that hangs is cut off at the margin too: a slow store cannot delay the stop.
- **Guarded writes carry the fencing token** (`token`, `lease`): a store write that checks
  it is refused once a newer grant exists, so a holder that was paused past its TTL cannot
  overwrite its successor's work.

Times here are the event loop's monotonic clock, and "renewed at" is when the renewal was
*sent*: the store set the new expiry no earlier than that, so the lease lasts at least a TTL
from then whatever the round trip took.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from bridge.core.instance import acquire_lease
from bridge.core.outage import OutageTracker
from bridge.store.leases import Lease, LeaseStore

log = logging.getLogger(__name__)

T = TypeVar("T")

STANDBY_RETRY = 2.0
"""Seconds between asks while another instance holds the lease."""
RENEWALS_PER_TTL = 3
RETRIES_PER_TTL = 12
"""While the store fails, how often (per TTL) a renewal is tried again."""


class LeaseLost(Exception):
    """The keeper could no longer be sure it held the lease; the work has been stopped."""


class LeaseKeeper:
    """Holds one named lease for one holder while guarded work runs (see the module doc)."""

    def __init__(
        self,
        leases: LeaseStore,
        name: str,
        holder: str,
        *,
        ttl: float,
        margin: float | None = None,
        standby_retry: float = STANDBY_RETRY,
        who: str | None = None,
    ) -> None:
        if margin is None:
            margin = ttl / 4
        if not 0 < margin < ttl * (1 - 1 / RENEWALS_PER_TTL):
            raise ValueError(f"a lease margin must be within (0, 2/3 TTL), got {margin!r}")
        self.leases = leases
        self.name = name
        self.holder = holder
        self.ttl = ttl
        self.margin = margin
        self.standby_retry = standby_retry
        self.who = who or name
        self.lease: Lease | None = None
        """The grant held now (None while standing by or after letting go)."""
        self._renewed_at = 0.0
        self.outage = OutageTracker(
            f"{self.who}:", lost=f"could not reach the store about the lease {name}",
            back=f"the store answers again about the lease {name}", retrying="trying again",
            logger=log,
        )

    @property
    def token(self) -> int | None:
        """The fencing token of the grant held now: pass it (or `lease`) to guarded writes."""
        return self.lease.token if self.lease is not None else None

    # ------------------------------------------------------------------ store answers
    def _store_failed(self, doing: str, exc: BaseException) -> None:
        """Once per outage at WARNING; a dead store must not write a line per try."""
        self.outage.down(f"{doing}: {type(exc).__name__}: {exc}")

    def _store_answered(self) -> None:
        self.outage.up()

    # ------------------------------------------------------------------ acquiring
    async def acquire(self) -> Lease | None:
        """One ask: the lease if this instance may work now (free, ours, or its holder died
        on this host), else None — a store error counts as None, logged once per outage."""
        started = asyncio.get_running_loop().time()
        try:
            lease = await acquire_lease(self.leases, self.name, self.holder, self.ttl)
        except Exception as exc:
            self._store_failed("ask for", exc)
            return None
        self._store_answered()
        if lease is not None:
            self.lease, self._renewed_at = lease, started
        return lease

    async def wait_acquire(self) -> Lease:
        """Ask every `standby_retry` seconds until the lease is ours."""
        while True:
            if (lease := await self.acquire()) is not None:
                return lease
            await asyncio.sleep(self.standby_retry)

    # ------------------------------------------------------------------ holding
    async def run(self, work: Callable[[Lease], Awaitable[T]]) -> T:
        """Run `work` (given the grant) under the lease acquired last, renewing it; returns
        what the work returns, and lets the lease go after it.

        Raises `LeaseLost` once the lease could no longer be trusted — after the work was
        cancelled and its teardown had finished. Cancelled from outside (an orderly stop),
        it stops the work, releases the lease at once for a standby, and re-raises.
        """
        lease = self.lease
        if lease is None:
            raise RuntimeError(f"{self.who}: run() before the lease {self.name} was acquired")
        task: asyncio.Task[T] = asyncio.ensure_future(work(lease))
        try:
            lost = await self._renew_while(task, lease)
        except asyncio.CancelledError:
            await self._stop(task)
            await self._let_go(lease)
            raise
        if lost:
            await self._stop(task)  # first: no two instances ever work at once
            await self._let_go(lease)
            raise LeaseLost(f"{self.who}: lost the lease {self.name}")
        await self._let_go(lease)
        return task.result()

    async def serve(
        self,
        work: Callable[[Lease], Awaitable[T]],
        *,
        on_standby: Callable[[], None] | None = None,
        standing_by: str | None = None,
    ) -> T:
        """Compete for the lease and `run` the work whenever it is ours, until the work
        returns by itself. `on_standby` is called each time another instance has it;
        `standing_by` is the line logged (once per standby) saying so, in the work's terms."""
        told = False
        note = standing_by or f"another bridge instance holds {self.name}; standing by"
        while True:
            if await self.acquire() is None:
                if not told:
                    log.info("%s: %s", self.who, note)
                    told = True
                if on_standby is not None:
                    on_standby()
                await asyncio.sleep(self.standby_retry)
                continue
            told = False
            try:
                return await self.run(work)
            except LeaseLost:
                # Give the instance that may have it now a moment before asking again.
                await asyncio.sleep(self.standby_retry)

    async def _renew_while(self, task: asyncio.Future[T], lease: Lease) -> bool:
        """Renew until `task` ends (False) or the lease can no longer be trusted (True)."""
        loop = asyncio.get_running_loop()
        failing = False
        while True:
            now = loop.time()
            deadline = self._renewed_at + self.ttl - self.margin
            period = self.ttl / (RETRIES_PER_TTL if failing else RENEWALS_PER_TTL)
            done, _ = await asyncio.wait({task}, timeout=max(0.0, min(period, deadline - now)))
            if done:
                return False
            sent = loop.time()
            if sent >= deadline:
                log.warning("%s: the store did not renew the lease %s in time; stopping the "
                            "work before another instance can take it", self.who, self.name)
                return True
            try:
                async with asyncio.timeout(deadline - sent):
                    renewed = await self.leases.renew(lease, self.ttl)
            except Exception as exc:  # the store is unreachable: the lease may still be ours
                self._store_failed("renew", exc)
                failing = True
                continue
            self._store_answered()
            failing = False
            if not renewed:
                log.warning("%s: lost the lease %s (token %s); stopping the work", self.who,
                            self.name, lease.token)
                return True
            self._renewed_at = sent

    @staticmethod
    async def _stop(task: asyncio.Future[T]) -> None:
        """Cancel the work and wait for its teardown; its own failure is logged, not raised."""
        task.cancel()
        await asyncio.wait({task})
        if not task.cancelled() and (failure := task.exception()) is not None:
            log.error("guarded work failed while it was stopped", exc_info=failure)

    async def _let_go(self, lease: Lease) -> None:
        """Release the grant (a no-op in the store if it is no longer ours); a store error
        only means a standby waits out the TTL."""
        self.lease = None
        try:
            await self.leases.release(lease)
        except Exception as exc:
            log.info("%s: could not release the lease %s (it expires by itself): %s",
                     self.who, self.name, exc)
