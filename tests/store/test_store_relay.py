"""The relay's concerns (seen keys, outbox, message map): one contract for every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bridge.store import Store
from bridge.store.relay import OutboxItem, SpoolEntry

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def item(lane: str = "t:main|room|", *parts: str) -> OutboxItem:
    return OutboxItem(lane=lane, kind="final", sender_label="Bot",
                      parts=list(parts or ("hello",)), created_at=T0)


async def test_seen_keys_are_new_once_and_asking_does_not_remember(store: Store) -> None:
    assert not await store.seen.has("k")
    assert await store.seen.add("k", T0)
    assert not await store.seen.add("k", T0)
    assert await store.seen.has("k")
    assert await store.seen.prune(T0 + timedelta(seconds=1)) == 1
    assert not await store.seen.has("k")


async def test_outbox_keeps_queue_order_and_parts_across_reads(store: Store) -> None:
    first, second = item("a", "one", "two"), item("b", "three")
    assert await store.outbox.append(first) == first.id
    await store.outbox.append(second)
    assert first.id < second.id
    await store.outbox.record_part(first.id, 0, "m-1")
    pending = await store.outbox.pending()
    assert [(p.id, p.lane, p.parts, p.sent) for p in pending] == [
        (first.id, "a", ["one", "two"], ["m-1", None]),
        (second.id, "b", ["three"], [None]),
    ]
    await store.outbox.complete(first.id)
    assert [p.id for p in await store.outbox.pending()] == [second.id]


async def test_an_append_once_queues_exactly_once_and_remembers_the_key(store: Store) -> None:
    assert await store.outbox.append(item(), once="evt:1", now=T0) is not None
    assert await store.outbox.append(item(), once="evt:1", now=T0) is None
    assert await store.seen.has("evt:1")
    assert len(await store.outbox.pending()) == 1
    # A key already seen by another path also stops the append.
    await store.seen.add("evt:2", T0)
    assert await store.outbox.append(item(), once="evt:2", now=T0) is None
    assert len(await store.outbox.pending()) == 1


async def test_message_map_replaces_values_and_prunes_by_age(store: Store) -> None:
    await store.message_map.put("k", {"a": 1}, T0)
    await store.message_map.put("k", {"a": 2}, T0 + timedelta(hours=1))
    await store.message_map.put("old", {"b": 1}, T0)
    assert await store.message_map.get("k") == {"a": 2}
    assert await store.message_map.prune(T0 + timedelta(minutes=30)) == 1
    assert await store.message_map.get("old") is None
    assert await store.message_map.get("missing") is None


async def test_outbox_reads_one_lane_at_a_time(store: Store) -> None:
    for lane, text in (("a", "a1"), ("b", "b1"), ("a", "a2"), ("a", "a3")):
        await store.outbox.append(item(lane, text))
    assert await store.outbox.lanes() == ["a", "b"]
    assert [p.parts for p in await store.outbox.pending(lane="a")] == [["a1"], ["a2"], ["a3"]]
    assert [p.parts for p in await store.outbox.pending(lane="a", limit=2)] == [["a1"], ["a2"]]
    for done in await store.outbox.pending(lane="b"):
        await store.outbox.complete(done.id)
    assert await store.outbox.lanes() == ["a"]


async def test_recording_a_part_of_a_completed_item_does_nothing(store: Store) -> None:
    queued = item("a", "one", "two")
    await store.outbox.append(queued)
    await store.outbox.complete(queued.id)
    await store.outbox.record_part(queued.id, 0, "m-late")
    assert await store.outbox.pending() == []
    kept = item("a", "one")
    await store.outbox.append(kept)
    with pytest.raises(IndexError):
        await store.outbox.record_part(kept.id, 1, "m-2")  # it has one part only


async def test_spool_keeps_arrival_order_once_per_key_and_counts(store: Store) -> None:
    def entry(text: str) -> SpoolEntry:
        return SpoolEntry(lane="t:main|room|", binding="telegram:main|room|",
                          params={"text": text, "nested": {"ü": [1, 2]}})

    ids = [await store.spool.append(entry(f"m{n}"), once=f"tg:{n}", now=T0) for n in range(3)]
    assert None not in ids and ids == sorted(ids)
    assert await store.spool.append(entry("again"), once="tg:1", now=T0) is None
    assert await store.seen.has("tg:2")
    assert await store.spool.count() == 3
    first_two = await store.spool.pending(limit=2)
    assert [(e.id, e.params["text"], e.created_at) for e in first_two] == [
        (ids[0], "m0", T0), (ids[1], "m1", T0)
    ]
    assert first_two[0].params["nested"] == {"ü": [1, 2]}
    await store.spool.complete(ids[0])
    assert [e.id for e in await store.spool.pending()] == ids[1:]
    assert await store.spool.count() == 2


async def test_a_posted_part_its_records_and_the_end_of_the_item_are_one_write(
    store: Store,
) -> None:
    queued = item("a", "one", "two")
    await store.outbox.append(queued)
    await store.outbox.record_part(queued.id, 0, "m-1",
                                   remember={"sent:a|m-1": {"run_id": "r"}}, now=T0)
    assert [p.sent for p in await store.outbox.pending()] == [["m-1", None]]
    assert await store.message_map.get("sent:a|m-1") == {"run_id": "r"}
    await store.outbox.record_part(queued.id, 1, "m-2",
                                   remember={"sent:a|m-2": {"run_id": "r"}}, now=T0, done=True)
    assert await store.outbox.pending() == []
    assert await store.outbox.lanes() == []
    assert await store.message_map.get("sent:a|m-2") == {"run_id": "r"}


async def test_many_parts_are_recorded_without_rewriting_the_item(store: Store) -> None:
    """A long reply's parts each add a small record: reading it back keeps every one."""
    parts = [f"part {n} " + "x" * 1000 for n in range(200)]
    queued = item("a", *parts)
    await store.outbox.append(queued)
    for n in range(199):
        await store.outbox.record_part(queued.id, n, f"m-{n}")
    [pending] = await store.outbox.pending()
    assert pending.sent == [f"m-{n}" for n in range(199)] + [None]
    assert pending.parts == parts


async def test_a_seen_key_tells_when_it_was_first_seen(store: Store) -> None:
    assert await store.seen.seen_at(["k"]) == {}
    await store.seen.add("k", T0)
    await store.seen.add("k", T0 + timedelta(hours=1))  # seen again: the first time stays
    assert await store.seen.seen_at(["k"]) == {"k": T0}


async def test_a_noted_key_is_seen_like_an_added_one(store: Store) -> None:
    assert await store.seen.note("in:a|b|m-1", T0)  # new
    assert not await store.seen.note("in:a|b|m-1", T0)  # a replay's claim
    assert await store.seen.has("in:a|b|m-1")
    assert not await store.seen.add("in:a|b|m-1", T0 + timedelta(seconds=1))
    assert await store.seen.seen_at(["in:a|b|m-1"]) == {"in:a|b|m-1": T0}


async def test_seen_keys_are_asked_for_several_at_once(store: Store) -> None:
    await store.seen.add("evt:1", T0)
    await store.seen.add("in:a|b|m-1", T0 + timedelta(seconds=3))
    found = await store.seen.seen_at(["in:a|b|m-1", "never", "evt:1"])
    assert found == {"evt:1": T0, "in:a|b|m-1": T0 + timedelta(seconds=3)}
    assert await store.seen.seen_at([]) == {}
    # Many at once too (a journal's batch; SQLite's compound SELECT stops at 500 terms).
    many = [f"k{n}" for n in range(1000)]
    assert await store.seen.seen_at([*many, "evt:1"]) == {"evt:1": T0}


async def test_outbox_counts_what_is_not_completed_in_every_lane(store: Store) -> None:
    assert await store.outbox.count() == 0
    queued = [item(lane, text) for lane, text in (("a", "a1"), ("b", "b1"), ("a", "a2"))]
    for each in queued:
        await store.outbox.append(each)
    assert await store.outbox.count() == 3
    await store.outbox.complete(queued[0].id)
    await store.outbox.record_part(queued[1].id, 0, "m-1", done=True)
    assert await store.outbox.count() == 1
