"""The one lease keeper, on every store backend: it rides out short store outages, and stops
the guarded work before the lease can pass to another instance.

Store errors are injected between the keeper and a real store (memory, SQLite, a real
redis-server); the competing instance talks to that store directly, so it sees the lease
exactly as the store has it. Orderings are asserted with events, never with clock readings.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.core.lease_keeper import LeaseKeeper, LeaseLost
from bridge.store import Store
from bridge.store.leases import Lease, LeaseStore
from tests.support.stores import STORE_KINDS, redis_server, store_of_kind

__all__ = ["redis_server"]

TTL = 1.5
MARGIN = 0.5
NAME = "telegram:main:poll"


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    async with store_of_kind(request.param, tmp_path, request) as opened:
        yield opened


class FlakyLeases(LeaseStore):
    """The store's leases as one instance reaches them: `failing` makes every call raise
    (the store is unreachable), `hanging` makes renewals never answer."""

    def __init__(self, inner: LeaseStore) -> None:
        self.inner = inner
        self.failing = False
        self.hanging = False
        self.failures = 0
        self.renewed = 0
        self.changed = asyncio.Event()

    def _gate(self) -> None:
        if self.failing:
            self.failures += 1
            self.changed.set()
            raise ConnectionError("the store is unreachable (injected)")

    async def acquire(self, name: str, holder: str, ttl: float) -> Lease | None:
        self._gate()
        return await self.inner.acquire(name, holder, ttl)

    async def take_over(self, name: str, dead_holder: str, holder: str,
                        ttl: float) -> Lease | None:
        self._gate()
        return await self.inner.take_over(name, dead_holder, holder, ttl)

    async def renew(self, lease: Lease, ttl: float) -> bool:
        if self.hanging:
            await asyncio.Event().wait()
        self._gate()
        renewed = await self.inner.renew(lease, ttl)
        self.renewed += 1
        self.changed.set()
        return renewed

    async def release(self, lease: Lease) -> None:
        self._gate()
        await self.inner.release(lease)

    async def holder(self, name: str) -> str | None:
        self._gate()
        return await self.inner.holder(name)

    async def until(self, condition: object) -> None:
        async with asyncio.timeout(30):
            while not condition():  # type: ignore[operator]
                self.changed.clear()
                await self.changed.wait()


class Work:
    """Guarded work that records when it runs and when its teardown has finished."""

    def __init__(self, events: list[str], teardown: float = 0.1) -> None:
        self.events = events
        self.teardown = teardown
        self.running = asyncio.Event()
        self.lease: Lease | None = None

    async def __call__(self, lease: Lease) -> None:
        self.lease = lease
        self.events.append("work started")
        self.running.set()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(self.teardown)  # stopping a poller takes a moment
            self.events.append("work stopped")


async def compete(leases: LeaseStore, events: list[str]) -> Lease:
    """Another instance asking for the lease every 10 ms, straight from the store."""
    while True:
        lease = await leases.acquire(NAME, "instance-b", TTL)
        if lease is not None:
            events.append("other acquired")
            return lease
        await asyncio.sleep(0.01)


def keeper_on(leases: LeaseStore, ttl: float = TTL, margin: float = MARGIN) -> LeaseKeeper:
    return LeaseKeeper(leases, NAME, "instance-a", ttl=ttl, margin=margin, standby_retry=0.05)


ROOMY_TTL, ROOMY_MARGIN = 6.0, 2.0
"""For a test whose point is that the margin is NOT reached: a stall of the event loop on a
loaded machine (seconds, on two busy cores) must not reach it, or the keeper rightly stops
the work and the test fails for a reason that is not its own."""


async def test_store_errors_shorter_than_the_margin_keep_the_lease_and_the_work(
    store: Store,
) -> None:
    events: list[str] = []
    flaky = FlakyLeases(store.leases)
    keeper = keeper_on(flaky, ROOMY_TTL, ROOMY_MARGIN)
    first = await keeper.acquire()
    assert first is not None and keeper.token == first.token
    work = Work(events)
    running = asyncio.create_task(keeper.run(work))
    other = asyncio.create_task(compete(store.leases, events))
    try:
        await work.running.wait()
        flaky.failing = True
        await flaky.until(lambda: flaky.failures >= 1)  # one renewal failed: a short outage
        flaky.failing = False
        before = flaky.renewed
        await flaky.until(lambda: flaky.renewed >= before + 2)  # and renewing goes on
        assert events == ["work started"]  # never stopped, nobody else got it
        assert not running.done() and not other.done()
        assert keeper.token == first.token
        assert await store.leases.holder(NAME) == "instance-a"
    finally:
        # The competitor is gone before the keeper stops: its acquire, in flight on a
        # Redis socket, must not land in the moment the orderly stop frees the lease.
        other.cancel()
        await asyncio.gather(other, return_exceptions=True)
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    assert events[-1] == "work stopped"
    assert await store.leases.holder(NAME) is None  # an orderly stop releases at once


@pytest.mark.parametrize("fault", ["failing", "hanging"])
async def test_an_outage_past_the_margin_stops_the_work_before_another_can_acquire(
    store: Store, fault: str
) -> None:
    events: list[str] = []
    flaky = FlakyLeases(store.leases)
    keeper = keeper_on(flaky)
    assert await keeper.acquire() is not None
    work = Work(events)
    running = asyncio.create_task(keeper.run(work))
    await work.running.wait()
    setattr(flaky, fault, True)  # unreachable, or answering nothing, from now on
    other = asyncio.create_task(compete(store.leases, events))
    try:
        with pytest.raises(LeaseLost):
            await running
        taken = await other
    finally:
        other.cancel()
        running.cancel()
        await asyncio.gather(other, running, return_exceptions=True)
    assert events == ["work started", "work stopped", "other acquired"]
    assert keeper.lease is None and keeper.token is None
    assert work.lease is not None and taken.token > work.lease.token


async def test_a_refused_renewal_stops_the_work(store: Store) -> None:
    events: list[str] = []
    keeper = keeper_on(store.leases)
    mine = await keeper.acquire()
    assert mine is not None
    work = Work(events, teardown=0)
    running = asyncio.create_task(keeper.run(work))
    await work.running.wait()
    # Another instance takes it (as if this one were a dead process of its host).
    taken = await store.leases.take_over(NAME, "instance-a", "instance-b", TTL)
    assert taken is not None and taken.token > mine.token
    with pytest.raises(LeaseLost):
        await running
    assert events == ["work started", "work stopped"]
    assert await store.leases.holder(NAME) == "instance-b"  # letting go never frees theirs


async def test_work_that_ends_returns_its_result_and_frees_the_lease(store: Store) -> None:
    keeper = keeper_on(store.leases)
    assert await keeper.acquire() is not None

    async def short(lease: Lease) -> int:
        assert await store.leases.holder(NAME) == "instance-a"
        return lease.token

    token = keeper.token
    assert await keeper.run(short) == token
    assert await store.leases.holder(NAME) is None


async def test_serve_stands_by_while_another_holds_it_and_takes_over_after(
    store: Store,
) -> None:
    theirs = await store.leases.acquire(NAME, "instance-b", TTL)
    assert theirs is not None
    keeper = keeper_on(store.leases)
    standing_by = asyncio.Event()
    took: list[int] = []

    async def work(lease: Lease) -> str:
        took.append(lease.token)
        return "done"

    serving = asyncio.create_task(keeper.serve(work, on_standby=standing_by.set))
    await standing_by.wait()
    assert not took
    await store.leases.release(theirs)
    assert await asyncio.wait_for(serving, 30) == "done"
    assert took and took[0] > theirs.token


async def test_a_store_that_fails_while_standing_by_is_asked_again(store: Store) -> None:
    flaky = FlakyLeases(store.leases)
    flaky.failing = True
    keeper = keeper_on(flaky)
    assert await keeper.acquire() is None  # an error counts as "not ours"
    flaky.failing = False
    assert await keeper.acquire() is not None
