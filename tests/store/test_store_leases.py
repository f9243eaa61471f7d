"""Leases with fencing tokens: one contract for every backend."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from bridge.store import Store
from bridge.store.leases import StaleLease
from bridge.store.relay import OutboxItem


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


def _item(text: str) -> OutboxItem:
    return OutboxItem(lane="fake:main|room|", kind="final", sender_label="Echo",
                      parts=[text, "second part"], created_at=datetime(2024, 1, 1, tzinfo=UTC))


async def test_a_stale_holders_fenced_outbox_writes_are_refused(store: Store) -> None:
    """A lane worker that lost its lease (paused past the TTL, then taken over) may not mark
    parts posted nor end items: its successor's view of the lane stays the truth."""
    item = _item("first part")
    await store.outbox.append(item)
    stale = await store.leases.acquire("lane:fake:main|room|", "instance-a", ttl=5)
    assert stale is not None
    fresh = await store.leases.take_over("lane:fake:main|room|", "instance-a", "instance-b", 5)
    assert fresh is not None and fresh.token > stale.token

    with pytest.raises(StaleLease):
        await store.outbox.record_part(item.id, 0, "m-stale", fence=stale,
                                       remember={"stale-record": {"x": 1}})
    with pytest.raises(StaleLease):
        await store.outbox.record_part(item.id, 1, "m-stale", fence=stale, done=True)
    with pytest.raises(StaleLease):
        await store.outbox.complete(item.id, fence=stale)
    [kept] = await store.outbox.pending()
    assert kept.sent == [None, None]  # nothing of the stale writes happened
    assert await store.message_map.get("stale-record") is None

    await store.outbox.record_part(item.id, 0, "m1", fence=fresh)
    [kept] = await store.outbox.pending()
    assert kept.sent == ["m1", None]
    await store.outbox.record_part(item.id, 1, "m2", fence=fresh, done=True)
    assert await store.outbox.pending() == []


async def test_a_fence_whose_lease_merely_expired_still_writes(store: Store) -> None:
    """Until someone else is granted the lease, nobody else does the work: not stale."""
    item = _item("only")
    await store.outbox.append(item)
    lease = await store.leases.acquire("lane:x", "instance-a", ttl=0.05)
    assert lease is not None
    await asyncio.sleep(0.1)
    await store.outbox.complete(item.id, fence=lease)
    assert await store.outbox.pending() == []
