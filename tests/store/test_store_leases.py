"""Leases with fencing tokens: one contract for every backend."""

from __future__ import annotations

import asyncio

from bridge.store import Store


async def test_one_holder_at_a_time_and_the_holder_extends_it(store: Store) -> None:
    first = await store.leases.acquire("poll:telegram:main", "instance-a", ttl=5)
    assert first is not None and first.holder == "instance-a"
    assert await store.leases.acquire("poll:telegram:main", "instance-b", ttl=5) is None
    again = await store.leases.acquire("poll:telegram:main", "instance-a", ttl=5)
    assert again == first  # held already: extended, same token
    assert await store.leases.renew(first, ttl=5)
    assert await store.leases.holder("poll:telegram:main") == "instance-a"
    assert await store.leases.acquire("other", "instance-b", ttl=5) is not None


async def test_an_expired_lease_goes_to_the_next_holder_with_a_larger_token(store: Store) -> None:
    first = await store.leases.acquire("sweep", "instance-a", ttl=0.05)
    assert first is not None
    await asyncio.sleep(0.1)
    assert await store.leases.holder("sweep") is None
    taken = await store.leases.acquire("sweep", "instance-b", ttl=5)
    assert taken is not None and taken.token > first.token
    assert not await store.leases.renew(first, ttl=5)  # the dead holder cannot take it back
    await store.leases.release(first)  # nor give away what is no longer its own
    assert await store.leases.holder("sweep") == "instance-b"


async def test_release_frees_it_at_once_and_tokens_keep_growing(store: Store) -> None:
    first = await store.leases.acquire("lane:x", "instance-a", ttl=5)
    assert first is not None
    await store.leases.release(first)
    assert await store.leases.holder("lane:x") is None
    second = await store.leases.acquire("lane:x", "instance-a", ttl=5)
    assert second is not None and second.token > first.token
