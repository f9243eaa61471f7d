"""Claims on inbound events (`seen.claim` / `release`): one contract for every backend.

Several bridge instances sharing a store may each be handed the same event; the claim is
what lets exactly one of them handle it. Redis runs against the real server, SQLite on a
real file; the races use separate store objects, as separate instances would.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.store import Store, open_store
from bridge.store.redis.store import RedisStore
from tests.support.redis_server import drop_prefix, with_prefix
from tests.support.stores import STORE_KINDS

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TTL = 600.0
"""Long enough that no claim in these tests expires unless the test means it to."""


async def test_a_claim_is_exclusive_until_released(store: Store) -> None:
    assert await store.seen.claim("in:t|c|1", "a", T0, TTL)
    assert not await store.seen.claim("in:t|c|1", "b", T0, TTL)
    # The holder itself is refused too: one event handed to one instance twice runs once.
    assert not await store.seen.claim("in:t|c|1", "a", T0, TTL)
    assert not await store.seen.has("in:t|c|1")  # claimed is not seen

    await store.seen.release("in:t|c|1", "b")  # not b's: nothing changes
    assert not await store.seen.claim("in:t|c|1", "b", T0, TTL)

    await store.seen.release("in:t|c|1", "a")
    assert await store.seen.claim("in:t|c|1", "b", T0, TTL)
    assert not await store.seen.claim("in:t|c|1", "a", T0, TTL)


async def test_an_expired_claim_can_be_taken(store: Store) -> None:
    """Its claimant died (kill -9) without releasing it: after the TTL a redelivery of the
    event is handled by someone. Redis judges expiry by its own clock (PX), memory and SQLite
    by `now`; the test moves both past the TTL, and asserts nothing about how long it took."""
    assert await store.seen.claim("evt:1", "dead", T0, 0.05)
    await asyncio.sleep(0.2)
    later = T0 + timedelta(seconds=1)
    assert await store.seen.claim("evt:1", "alive", later, TTL)
    assert not await store.seen.claim("evt:1", "other", later, TTL)
    await store.seen.release("evt:1", "dead")  # the dead one's late release takes nothing
    assert not await store.seen.claim("evt:1", "other", later, TTL)


@pytest.mark.parametrize("mark", ["add", "note"])
async def test_a_seen_key_can_never_be_claimed_again(store: Store, mark: str) -> None:
    assert await store.seen.claim("in:t|c|2", "a", T0, TTL)
    # The claimant's own mark is the key's first: the claim does not make it seen.
    assert await getattr(store.seen, mark)("in:t|c|2", T0)
    assert await store.seen.has("in:t|c|2")
    await store.seen.release("in:t|c|2", "a")  # failing after it was marked: still seen
    for holder, now in (("a", T0), ("b", T0), ("b", T0 + timedelta(days=1))):
        assert not await store.seen.claim("in:t|c|2", holder, now, TTL)
    # A key seen without ever being claimed (a spool's `once`) is refused alike.
    await store.seen.add("in:t|c|3", T0)
    assert not await store.seen.claim("in:t|c|3", "a", T0, TTL)


async def test_prune_forgets_seen_keys_and_the_claims_that_are_moot(store: Store) -> None:
    """A week-old seen key goes; the claim it was handled under (long expired by then: a
    Redis claim by PX, so its TTL here is short) is no obstacle afterwards."""
    await store.seen.claim("old", "a", T0, 0.05)
    await store.seen.add("old", T0)
    await asyncio.sleep(0.2)
    await store.seen.claim("held", "a", T0 + timedelta(days=2), TTL)
    await store.seen.prune(T0 + timedelta(days=1))
    assert await store.seen.claim("old", "b", T0 + timedelta(days=2), TTL)  # forgotten
    assert not await store.seen.claim("held", "b", T0 + timedelta(days=2), TTL)


# ---------------------------------------------------------------------- against a model
KEYS = ["k1", "k2", "k3"]
HOLDERS = ["a", "b"]
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("claim"), st.sampled_from(KEYS), st.sampled_from(HOLDERS)),
        st.tuples(st.just("release"), st.sampled_from(KEYS), st.sampled_from(HOLDERS)),
        st.tuples(st.just("add"), st.sampled_from(KEYS), st.none()),
    ),
    max_size=25,
)


class ClaimModel:
    """What claim/release/add mean, in the fewest words: a key is seen, held by one, or free."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.held: dict[str, str] = {}

    def claim(self, key: str, holder: str) -> bool:
        if key in self.seen or key in self.held:
            return False
        self.held[key] = holder
        return True

    def release(self, key: str, holder: str) -> None:
        if self.held.get(key) == holder:
            del self.held[key]

    def add(self, key: str) -> bool:
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


async def _run_against_model(store: Store, ops: list[tuple[str, str, str | None]]) -> None:
    model = ClaimModel()
    for op, key, holder in ops:
        if op == "claim":
            assert holder is not None
            assert await store.seen.claim(key, holder, T0, TTL) == model.claim(key, holder)
        elif op == "release":
            assert holder is not None
            await store.seen.release(key, holder)
            model.release(key, holder)
        else:
            assert await store.seen.add(key, T0) == model.add(key)
    for key in KEYS:
        assert await store.seen.has(key) == (key in model.seen)
        # Whoever the model says may not claim it, may not; a free key is anyone's.
        free = key not in model.seen and key not in model.held
        assert await store.seen.claim(key, "c", T0, TTL) == free


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_claims_follow_the_model(kind: str, request: pytest.FixtureRequest) -> None:
    """Any sequence of claims, releases and adds by two holders answers as `ClaimModel`."""
    base = request.getfixturevalue("redis_server") if kind == "redis" else None

    @settings(max_examples=40, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(OPS)
    def check(ops: list[tuple[str, str, str | None]]) -> None:
        folder = tempfile.mkdtemp()
        try:
            asyncio.run(_one_example(kind, base, Path(folder), ops))
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    check()


async def _one_example(
    kind: str, base: str | None, folder: Path, ops: list[tuple[str, str, str | None]]
) -> None:
    prefix = None
    if kind == "memory":
        url = "memory://"
    elif kind == "sqlite":
        url = f"sqlite:///{folder}/state.db"
    else:
        assert base is not None
        url, prefix = with_prefix(base)
    async with open_store(url) as store:
        try:
            await _run_against_model(store, ops)
        finally:
            if isinstance(store, RedisStore) and prefix is not None:
                await drop_prefix(store.redis, prefix)


# ---------------------------------------------------------------------- two instances racing
RACED = [f"in:t|room|{n}" for n in range(200)]


async def _claim_all(store: Store, holder: str) -> set[str]:
    won = await asyncio.gather(*(store.seen.claim(key, holder, T0, TTL) for key in RACED))
    return {key for key, took in zip(RACED, won, strict=True) if took}


async def test_two_redis_stores_racing_win_each_key_exactly_once(redis_url: str) -> None:
    async with open_store(redis_url) as first, open_store(redis_url) as second:
        a, b = await asyncio.gather(_claim_all(first, "a"), _claim_all(second, "b"))
    assert a | b == set(RACED)
    assert not a & b


def _sqlite_instance(path: Path, holder: str) -> set[str]:
    async def run() -> set[str]:
        async with open_store(f"sqlite:///{path}") as store:
            return await _claim_all(store, holder)

    return asyncio.run(run())


async def test_two_sqlite_stores_racing_win_each_key_exactly_once(tmp_path: Path) -> None:
    """Two connections to one file, each on its own thread and event loop as a second
    process would be (on one loop, one connection's open write would block the other's
    thread, and with it the loop that should commit it)."""
    path = tmp_path / "state.db"
    async with open_store(f"sqlite:///{path}"):
        pass  # migrated once, so the racers do not race the schema
    a, b = await asyncio.gather(
        asyncio.to_thread(_sqlite_instance, path, "a"),
        asyncio.to_thread(_sqlite_instance, path, "b"),
    )
    assert a | b == set(RACED)
    assert not a & b


async def test_a_redis_claim_is_one_key_that_expires_by_itself(redis_url: str) -> None:
    """`P:claim:<key>` (docs/tracking.md) holds the claimant and always carries its TTL, so
    the claim of an instance killed mid-handling needs nobody to clean it up."""
    async with open_store(redis_url) as store:
        assert isinstance(store, RedisStore)
        await store.seen.claim("in:t|c|9", "me", T0, 30)
        key = store.keys.claim("in:t|c|9")
        assert await store.redis.get(key) == "me"
        assert 0 < await store.redis.pttl(key) <= 30_000
        await store.seen.release("in:t|c|9", "me")
        assert await store.redis.exists(key) == 0


async def test_a_dead_claimants_claim_is_taken_over_only_from_it(store: Store) -> None:
    """`take_over` is a compare and set: it moves the claim from the named dead holder only,
    never from another holder, never on a seen key; `claimant` names the live claim."""
    assert await store.seen.claimant("evt:t") is None
    assert await store.seen.claim("evt:t", "dead", T0, TTL)
    assert await store.seen.claimant("evt:t") == "dead"
    assert not await store.seen.take_over("evt:t", "someone-else", "b", T0, TTL)
    assert await store.seen.take_over("evt:t", "dead", "b", T0, TTL)
    assert await store.seen.claimant("evt:t") == "b"
    assert not await store.seen.take_over("evt:t", "dead", "c", T0, TTL)  # b has it now
    assert not await store.seen.claim("evt:t", "c", T0, TTL)
    await store.seen.release("evt:t", "b")
    assert await store.seen.claimant("evt:t") is None
    assert not await store.seen.take_over("evt:t", "b", "c", T0, TTL)  # nothing to take

    assert await store.seen.claim("evt:u", "dead", T0, TTL)
    assert await store.seen.add("evt:u", T0)
    assert await store.seen.claimant("evt:u") is None  # seen: the claim says nothing more
    assert not await store.seen.take_over("evt:u", "dead", "b", T0, TTL)
