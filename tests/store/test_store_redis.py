"""What only the Redis store promises: several instances share it safely.

Two `RedisStore`s opened on the same URL are two connection pools, as two bridge instances
would have; they race on one real redis-server. Races are checked by what must hold after
them (nothing lost, nothing doubled, one winner), never by timing.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

import bridge.store.redis.aging as aging
import bridge.store.redis.conversations as conversations_module
import bridge.store.redis.queue as queue_module
from bridge.store import Conversation, HistoryEntry, Store, open_store
from bridge.store.micros import to_micros
from bridge.store.redis.keys import GUARD_SLACK_MS, HELD_TTL_MS, RUN_TTL_MS
from bridge.store.redis.store import RedisStore
from bridge.store.relay import OutboxItem
from tests.store.test_store_conversations import record
from tests.support.redis_server import drop_prefix, with_db, with_prefix

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
LANE = "t:main|room|"


async def opened(url: str) -> RedisStore:
    store = await open_store(url)
    assert isinstance(store, RedisStore)
    return store


@pytest.fixture
async def two(redis_url: str) -> AsyncIterator[tuple[RedisStore, RedisStore]]:
    """Two instances on one Redis and one prefix."""
    first, second = await opened(redis_url), await opened(redis_url)
    try:
        yield first, second
    finally:
        await first.close()
        await second.close()


@pytest.fixture
async def redis_store(redis_url: str) -> AsyncIterator[RedisStore]:
    """One instance."""
    store = await opened(redis_url)
    try:
        yield store
    finally:
        await store.close()


def entry(text: str, at: datetime = T0) -> HistoryEntry:
    return HistoryEntry("ANSWER", "alice", "Weather", "open", at, text, None)


def appending(text: str) -> Callable[[Conversation | None], Conversation]:
    def change(current: Conversation | None) -> Conversation:
        assert current is not None
        return replace(current, history=(*current.history, entry(text)))

    return change


def output(text: str, lane: str = LANE) -> OutboxItem:
    return OutboxItem(lane=lane, kind="final", sender_label="Echo", parts=[text], created_at=T0)


def in_another_instance(url: str, work: Callable[[Store], Awaitable[object]]) -> None:
    """Run `work` to completion on a third instance with its own event loop and thread,
    while the caller's loop is blocked: a write that lands exactly in between."""
    failures: list[BaseException] = []

    def main() -> None:
        async def run() -> None:
            async with open_store(url) as other:
                await work(other)

        try:
            asyncio.run(run())
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=main)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive() and not failures, failures


async def test_a_write_in_between_makes_update_apply_the_change_again(
    redis_store: RedisStore, redis_url: str
) -> None:
    await redis_store.conversations.update("r-1", lambda _: record("r-1"))
    seen: list[list[str]] = []

    def mine(current: Conversation | None) -> Conversation:
        assert current is not None
        seen.append([e.content or "" for e in current.history])
        if len(seen) == 1:  # after our read, before our write: another instance writes
            in_another_instance(
                redis_url, lambda other: other.conversations.update("r-1", appending("theirs"))
            )
        return replace(current, history=(*current.history, entry("mine")))

    updated = await redis_store.conversations.update("r-1", mine)
    assert seen == [["task"], ["task", "theirs"]]  # called again, on their write
    stored = await redis_store.conversations.get("r-1")
    assert stored == updated.conversation
    assert stored is not None
    assert [e.content for e in stored.history] == ["task", "theirs", "mine"]


async def test_concurrent_updates_from_two_instances_lose_no_entry(
    two: tuple[RedisStore, RedisStore],
) -> None:
    first, second = two
    await first.conversations.update("busy", lambda _: replace(record("busy"), task="0"))

    def counting(text: str) -> Callable[[Conversation | None], Conversation]:
        """Bump the count in `task` and log the count it reached: a change decided on a stale
        read would reach a count another change reached too."""

        def change(current: Conversation | None) -> Conversation:
            assert current is not None and current.task is not None
            count = int(current.task) + 1
            logged = entry(f"{count}:{text}")
            return replace(current, task=str(count), history=(*current.history, logged))

        return change

    texts = [f"{who}-{n}" for who in ("a", "b") for n in range(40)]
    await asyncio.gather(*(
        (first if text.startswith("a") else second).conversations.update("busy", counting(text))
        for text in texts
    ))  # fmt: skip
    stored = await second.conversations.get("busy")
    assert stored is not None and stored.task == str(len(texts))
    logged = [(e.content or "").split(":") for e in stored.history[1:]]
    assert [int(count) for count, _ in logged] == list(range(1, len(texts) + 1))
    assert sorted(text for _, text in logged) == sorted(texts)  # every one, once
    assert await first.conversations.get("busy") == stored


async def test_one_instances_own_updates_of_a_key_take_turns_instead_of_retrying(
    redis_store: RedisStore,
) -> None:
    await redis_store.conversations.update("hot", lambda _: record("hot"))
    calls: list[str] = []

    def logging_append(text: str) -> Callable[[Conversation | None], Conversation]:
        def change(current: Conversation | None) -> Conversation:
            calls.append(text)
            return appending(text)(current)

        return change

    texts = [f"n{n}" for n in range(50)]
    await asyncio.gather(*(redis_store.conversations.update("hot", logging_append(t))
                           for t in texts))
    assert calls == texts  # each change ran once, in the order the updates were made
    stored = await redis_store.conversations.get("hot")
    assert stored is not None and [e.content for e in stored.history[1:]] == texts


async def test_append_once_raced_from_two_instances_queues_exactly_one(
    two: tuple[RedisStore, RedisStore],
) -> None:
    first, second = two
    results = await asyncio.gather(*(
        store.outbox.append(output(f"reply {n}"), once=f"evt:{n}", now=T0)
        for n in range(30) for store in (first, second)
    ))  # fmt: skip
    pairs = [results[index : index + 2] for index in range(0, len(results), 2)]
    assert all(sum(result is not None for result in pair) == 1 for pair in pairs)
    pending = await first.outbox.pending()
    assert sorted(item.parts[0] for item in pending) == sorted(f"reply {n}" for n in range(30))
    assert [item.id for item in pending] == sorted(r for r in results if r is not None)


async def test_spool_once_raced_from_two_instances_queues_exactly_one(
    two: tuple[RedisStore, RedisStore],
) -> None:
    from bridge.store.relay import SpoolEntry

    first, second = two
    message = SpoolEntry(lane=LANE, binding="t:main|room|", params={"text": "hi"})
    results = await asyncio.gather(
        first.spool.append(message, once="tg:7", now=T0),
        second.spool.append(message, once="tg:7", now=T0),
    )
    assert sum(result is not None for result in results) == 1
    assert await second.spool.count() == 1


async def wait_until_free(store: Store, name: str) -> None:
    for _ in range(200):
        if await store.leases.holder(name) is None:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"lease {name} never expired")


async def test_a_contended_lease_has_one_holder_and_expiry_hands_it_over(
    two: tuple[RedisStore, RedisStore],
) -> None:
    first, second = two
    granted = await asyncio.gather(
        first.leases.acquire("poll:telegram:main", "instance-a", ttl=0.3),
        second.leases.acquire("poll:telegram:main", "instance-b", ttl=0.3),
    )
    winners = [lease for lease in granted if lease is not None]
    assert len(winners) == 1
    (old,) = winners
    assert await second.leases.holder("poll:telegram:main") == old.holder
    loser, loser_name = (second, "instance-b") if old.holder == "instance-a" else (
        first, "instance-a")  # fmt: skip
    winner = first if loser is second else second
    assert await loser.leases.acquire("poll:telegram:main", loser_name, ttl=5) is None

    await wait_until_free(loser, "poll:telegram:main")  # the holder "died": no renewals
    new = await loser.leases.acquire("poll:telegram:main", loser_name, ttl=5)
    assert new is not None and new.token > old.token
    assert not await winner.leases.renew(old, ttl=5)
    await winner.leases.release(old)
    assert await winner.leases.holder("poll:telegram:main") == loser_name
    assert await loser.leases.renew(new, ttl=5)


async def test_two_instances_counting_one_lane_trip_it_exactly_once(
    two: tuple[RedisStore, RedisStore],
) -> None:
    first, second = two
    verdicts = await asyncio.gather(*(
        store.loop_guard.bot_spoke(LANE, limit=5, window=60, now=T0 + timedelta(seconds=n))
        for n in range(10) for store in (first, second)
    ))  # fmt: skip
    assert sorted(verdicts) == sorted(["allow"] * 5 + ["tripped"] + ["paused"] * 14)


async def pause(store: Store, lane: str = LANE) -> None:
    for n in range(3):
        await store.loop_guard.bot_spoke(lane, limit=2, window=60, now=T0 + timedelta(seconds=n))
    assert await store.loop_guard.is_paused(lane)


async def test_holds_racing_a_human_lose_nothing_and_double_nothing(
    two: tuple[RedisStore, RedisStore],
) -> None:
    first, second = two
    await pause(first)
    texts = [f"held {n}" for n in range(40)]

    async def hold(text: str) -> bool:
        return await first.loop_guard.hold(LANE, output(text), keep=100, once=text, now=T0)

    holds = [hold(text) for text in texts]
    results = await asyncio.gather(*holds[:20], second.loop_guard.human_spoke(LANE), *holds[20:])
    released = results[20]
    assert all(results[:20]) and all(results[21:])
    assert released is not None and released.not_kept == 0
    # Whatever was held after the release waits for the next pause and the next human.
    await pause(second)
    later = await first.loop_guard.human_spoke(LANE)
    assert later is not None
    out = [item.parts[0] for item in (*released.items, *later.items)]
    assert sorted(out) == sorted(texts)  # each held output released exactly once
    queued = await second.outbox.pending()
    assert [item.parts[0] for item in queued] == out  # queued in the order released
    assert [item.id for item in queued] == [item.id for item in (*released.items, *later.items)]


async def test_held_beyond_keep_is_counted_across_instances(
    two: tuple[RedisStore, RedisStore],
) -> None:
    first, second = two
    await pause(first)
    await asyncio.gather(*(
        store.loop_guard.hold(LANE, output(f"h{n}"), keep=3, once=f"k{n}", now=T0)
        for n in range(5) for store in (first, second)
    ))  # fmt: skip
    released = await second.loop_guard.human_spoke(LANE)
    assert released is not None
    assert (len(released.items), released.not_kept) == (3, 2)  # 5 keys, each held once


async def exercise(store: Store, lane: str = LANE) -> None:
    """Touch every concern, including what deletes and prunes."""
    conversations = store.conversations
    await conversations.update("open-1", lambda _: record("open-1"))
    await conversations.update("done-1", lambda _: record("done-1", status="done", deadline=None))
    await conversations.find(statuses={"open"}, chat="discord:123")
    await conversations.page(statuses={"open"}, bot="lotbot", limit=1)
    await conversations.counts(chat="discord:123", bot="Lotbot")
    await conversations.due(T0 + timedelta(hours=1))
    await conversations.remove_finished(T0 + timedelta(days=1))
    await store.seen.add("seen-1", T0)
    await store.seen.prune(T0)
    queued = output("out")
    await store.outbox.append(queued, once="evt-1", now=T0)
    await store.outbox.record_part(queued.id, 0, "m-1")
    await store.outbox.append(output("second"))
    await store.outbox.pending()
    await store.outbox.complete(queued.id)
    from bridge.store.relay import SpoolEntry

    await store.spool.append(SpoolEntry(lane, "b", {"text": "x"}), once="tg-1", now=T0)
    await store.spool.pending()
    await store.loop_guard.bot_spoke("calm|lane|", limit=5, window=30, now=T0)
    await pause(store, lane)
    await store.loop_guard.hold(lane, output("held"), keep=1, once="evt-2", now=T0)
    await store.loop_guard.hold(lane, output("over"), keep=1, once=None, now=T0)
    await store.loop_guard.held_lanes()
    await store.pauses.pause("webchat:main|room-1|", "ada", T0)
    await store.pauses.pause("webchat:main|room-2|", "ada", T0)
    await store.pauses.resume("webchat:main|room-2|")
    await store.pauses.all()
    await store.streams.append("run-1", 1, "Hel", T0)
    await store.streams.append("run-2", 1, "gone", T0)
    await store.streams.take("run-2", T0)
    await store.streams.prune(T0 - timedelta(days=1))
    lease = await store.leases.acquire("sweep", "me", ttl=30)
    assert lease is not None
    await store.leases.renew(lease, ttl=30)
    await store.message_map.put("tg:main:5", {"run": "run-1"}, T0)
    await store.message_map.get("tg:main:5")
    await store.message_map.prune(T0)


DOCUMENTED_FAMILIES = {
    "conv", "convs", "seen", "map", "outbox", "spool", "guard", "guards", "held", "run",
    "runs", "lease", "lease-token", "pauses",
}  # fmt: skip
"""Every key family docs/tracking.md lists."""


async def test_every_key_is_under_the_prefix_and_nothing_else_is_touched(
    private_redis: str,
) -> None:
    url, prefix = with_prefix(private_redis)
    store = await opened(url)
    try:
        redis = store.redis
        # Neighbours: another prefix, a look-alike of ours, and bare names we also use.
        sentinels = {
            f"{prefix}x:seen": "lookalike", f"{prefix}": "bare prefix", "seen": "bare",
            "bcn-bridge:conv:open-1": "default prefix", "other:conv:open-1": "other prefix",
        }  # fmt: skip
        for key, value in sentinels.items():
            await redis.set(key, value)
        before = {key async for key in redis.scan_iter(count=500)}

        await exercise(store)

        after = {key async for key in redis.scan_iter(count=500)}
        assert before - after == set()  # nothing of anyone else's went
        created = after - before
        assert created and all(key.startswith(f"{prefix}:") for key in created), created
        families = {key[len(prefix) + 1 :].split(":")[0] for key in created}
        assert families <= DOCUMENTED_FAMILIES, families - DOCUMENTED_FAMILIES
        for key, value in sentinels.items():
            assert await redis.get(key) == value and await redis.pttl(key) == -1
        await drop_prefix(redis, prefix)
        assert {key async for key in redis.scan_iter(count=500)} == before
    finally:
        await store.close()


async def test_keys_that_can_be_abandoned_expire_and_state_does_not(
    redis_store: RedisStore,
) -> None:
    await exercise(redis_store)
    keys, redis = redis_store.keys, redis_store.redis

    async def ttl(key: str) -> int:
        return int(await redis.pttl(key))

    assert 0 < await ttl(keys.guard("calm|lane|")) <= 30_000 + GUARD_SLACK_MS
    assert 30_000 + GUARD_SLACK_MS < await ttl(keys.guard(LANE)) <= HELD_TTL_MS  # paused
    assert 0 < await ttl(keys.held(LANE)) <= HELD_TTL_MS
    assert 0 < await ttl(keys.run("run-1")) <= RUN_TTL_MS
    assert 0 < await ttl(keys.lease("sweep")) <= 30_000
    # Kept on purpose: fencing tokens must only grow, and state the bridge still needs
    # is removed by its own operation (remove_finished, complete, prune), not by age.
    for kept in (keys.lease_token("sweep"), keys.conversation("open-1"), keys.seen,
                 keys.created, keys.deadlines, keys.queue("outbox").order, keys.pauses,
                 keys.paused_lanes, keys.count()):
        assert await ttl(kept) == -1, kept


async def test_the_database_number_is_honoured(redis_server: str) -> None:
    url, prefix = with_prefix(with_db(redis_server, 3))
    other_url, _ = with_prefix(with_db(redis_server, 4), prefix)
    three, four = await opened(url), await opened(other_url)
    try:
        await three.conversations.update("r-db", lambda _: record("r-db"))
        assert await four.conversations.get("r-db") is None
        assert await three.redis.exists(three.keys.conversation("r-db")) == 1
        assert await four.redis.exists(four.keys.conversation("r-db")) == 0
        assert (await three.redis.client_info())["db"] == 3
    finally:
        await drop_prefix(three.redis, prefix)
        await drop_prefix(four.redis, prefix)
        await three.close()
        await four.close()


async def test_big_sets_are_read_and_pruned_in_bounded_batches(
    redis_store: RedisStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module, name in ((conversations_module, "CHUNK"), (conversations_module, "REMOVE_BATCH"),
                         (queue_module, "PAGE"), (aging, "PRUNE_BATCH")):
        monkeypatch.setattr(module, name, 3)  # many batches from a few records
    for n in range(10):
        await redis_store.conversations.update(
            f"open-{n}", lambda _, n=n: record(f"open-{n}", deadline=T0 + timedelta(minutes=n))
        )
        await redis_store.conversations.update(
            f"done-{n}", lambda _, n=n: record(f"done-{n}", status="done", deadline=None)
        )
        await redis_store.outbox.append(output(f"out {n}"))
        await redis_store.seen.add(f"key-{n}", T0)
        await redis_store.message_map.put(f"map-{n}", {"n": n}, T0)
        await redis_store.streams.append(f"run-{n}", 1, "x", T0)
    found = await redis_store.conversations.find(statuses={"open"})
    assert [c.request_id for c in found] == [f"open-{n}" for n in range(10)]
    assert len(await redis_store.conversations.find()) == 20
    assert await redis_store.conversations.due(T0 + timedelta(minutes=6)) == [
        f"open-{n}" for n in range(7)
    ]
    assert len(await redis_store.conversations.due(T0 + timedelta(hours=1), limit=8)) == 8
    pending = await redis_store.outbox.pending()
    assert [i.parts[0] for i in pending] == [f"out {n}" for n in range(10)]
    assert await redis_store.conversations.remove_finished(T0 + timedelta(days=1)) == 10
    assert await redis_store.conversations.find(statuses={"done"}) == []
    later = T0 + timedelta(seconds=1)
    assert await redis_store.seen.prune(later) == 10
    assert await redis_store.message_map.prune(later) == 10
    assert await redis_store.streams.prune(later) == 10
    assert await redis_store.redis.exists(redis_store.keys.run("run-0")) == 0


async def test_a_finished_index_entry_without_its_record_does_not_stall_cleanup(
    redis_store: RedisStore,
) -> None:
    await redis_store.conversations.update("done", lambda _: record("done", status="done",
                                                               deadline=None))
    stray = {"lost": to_micros(T0)}  # an index entry whose record is gone
    await redis_store.redis.zadd(redis_store.keys.finished, stray)
    assert await redis_store.conversations.remove_finished(T0 + timedelta(days=1)) == 1
    assert await redis_store.redis.zcard(redis_store.keys.finished) == 0


async def test_a_lease_ttl_must_be_positive(redis_store: RedisStore) -> None:
    with pytest.raises(ValueError, match="positive number of seconds"):
        await redis_store.leases.acquire("x", "me", ttl=0)


async def test_two_instances_numbering_one_runs_deltas_keep_every_delta(
    two: tuple[RedisStore, RedisStore],
) -> None:
    """Deltas without a seq, appended at once through two stores on one Redis (two bridge
    instances): each gets its own number, none overwrites another."""
    first, second = two
    words = [f"w{n} " for n in range(40)]
    await asyncio.gather(*(
        (first if n % 2 else second).streams.append("run-shared", None, word, T0)
        for n, word in enumerate(words)))
    text = await first.streams.take("run-shared", T0)
    assert sorted(text.split()) == sorted(word.strip() for word in words)
