"""Redis sizing: bytes per open conversation and per queued outbox item, against SQLite.

Run: `python bench/redis_size.py [--url redis://127.0.0.1:6379/0] [--count 10000] [--runs 3]`
(the URL defaults to $REDIS_URL, then 127.0.0.1:6379; `?prefix=` is replaced by a fresh one).

Each run tracks `count` conversations through the Tracker with a typical history (a REQUEST,
then the worker's CLARIFY, so it stays open and waits with a deadline) and then queues
`count` outbox items (a three-sentence bot reply each), under a fresh key prefix that is
deleted afterwards. Redis is measured two ways: `INFO memory` used_memory before and after
(everything the server allocated, including the keyspace's own entries; other clients of a
shared server add noise, hence several runs and the median) and the sum of `MEMORY USAGE
key SAMPLES 0` over the run's keys (exact, only ours, but without the keyspace entries). The
same workload goes into a SQLite file, measured as file bytes after a WAL checkpoint. It
prints figures; nothing here asserts a size.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bridge.protocol import Depth, MessageType, ProtocolMessage
from bridge.store import Store, open_store
from bridge.store.redis.store import RedisStore
from bridge.store.relay import OutboxItem
from bridge.store.sqlite import SqliteStore
from bridge.tracking import Tracker

BASE = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
IN_FLIGHT = 64  # concurrent writes while filling (an instance's pool holds 32 connections)


def request(i: int) -> ProtocolMessage:
    return ProtocolMessage(
        type=MessageType.REQUEST, to=f"Worker{i % 50}", from_=f"Lotbot{i % 7}",
        request_id=f"lotbot-{i:08x}",
        task=f"Summarise thread #{i} and list the open questions for the weekly review",
        context="User asked in #planning", depth=Depth(1, 5), priority="normal",
    )  # fmt: skip


def clarify(i: int) -> ProtocolMessage:
    return ProtocolMessage(
        type=MessageType.CLARIFY, to=f"Lotbot{i % 7}", from_=f"Worker{i % 50}",
        request_id=f"lotbot-{i:08x}", question="Which week: this one or the next?",
        depth=Depth(2, 5),
    )  # fmt: skip


def reply(i: int) -> OutboxItem:
    text = (
        f"Thread #{i} has three open questions. The budget owner has not answered yet, and the"
        " launch date depends on it. I will check again tomorrow morning and report back here."
    )
    return OutboxItem(
        lane=f"telegram:main|-100{i % 20}|", kind="final", sender_label=f"Worker{i % 50}",
        parts=[text], conversation=f"lotbot-{i:08x}", run_id=f"run-{i:08x}", created_at=BASE,
    )  # fmt: skip


async def bounded(count: int, work: Callable[[int], Awaitable[object]]) -> None:
    """Run work(0..count-1) with at most IN_FLIGHT at once (as busy instances would)."""
    queue = iter(range(count))

    async def worker() -> None:
        for i in queue:
            await work(i)

    await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))


async def fill_conversations(store: Store, count: int) -> None:
    tracker = Tracker(store)

    async def one(i: int) -> None:
        await tracker.track(request(i), now=BASE, chat=f"telegram:main:-100{i % 20}")
        await tracker.track(clarify(i), now=BASE, chat=f"telegram:main:-100{i % 20}")

    await bounded(count, one)
    opened = await store.conversations.find(statuses={"clarifying"})
    assert len(opened) == count and all(len(c.history) == 2 for c in opened)


async def fill_outbox(store: Store, count: int) -> None:
    await bounded(count, lambda i: store.outbox.append(reply(i), once=f"evt:{i}", now=BASE))


def fresh_prefix(url: str) -> tuple[str, str]:
    prefix = f"bench-{uuid.uuid4().hex[:12]}"
    parts = urlsplit(url)
    query = [(name, value) for name, value in parse_qsl(parts.query) if name != "prefix"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("prefix", prefix)]))), prefix


async def used_memory(store: RedisStore) -> int:
    return int((await store.redis.info("memory"))["used_memory"])


async def keys_usage(store: RedisStore, prefix: str) -> int:
    keys = [key async for key in store.redis.scan_iter(match=f"{prefix}:*", count=1000)]
    total = 0
    for start in range(0, len(keys), 500):
        async with store.redis.pipeline(transaction=False) as pipe:
            for key in keys[start : start + 500]:
                pipe.memory_usage(key, samples=0)
            total += sum(int(usage or 0) for usage in await pipe.execute())
    return total


async def drop(store: RedisStore, prefix: str) -> None:
    keys = [key async for key in store.redis.scan_iter(match=f"{prefix}:*", count=1000)]
    for start in range(0, len(keys), 500):
        await store.redis.delete(*keys[start : start + 500])


async def measure_redis(url: str, count: int) -> dict[str, float]:
    run_url, prefix = fresh_prefix(url)
    store = await open_store(run_url)
    assert isinstance(store, RedisStore)
    try:
        before = await used_memory(store)
        await fill_conversations(store, count)
        conversations_used = await used_memory(store) - before
        conversations_keys = await keys_usage(store, prefix)
        before = await used_memory(store)
        await fill_outbox(store, count)
        outbox_used = await used_memory(store) - before
        outbox_keys = await keys_usage(store, prefix) - conversations_keys
    finally:
        await drop(store, prefix)
        await store.close()
    return {
        "conversation_used": conversations_used / count,
        "conversation_keys": conversations_keys / count,
        "outbox_used": outbox_used / count,
        "outbox_keys": outbox_keys / count,
    }


def file_bytes(store: SqliteStore, path: Path) -> int:
    store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


async def measure_sqlite(count: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "size.db"
        async with open_store(f"sqlite:///{path}") as store:
            assert isinstance(store, SqliteStore)
            empty = file_bytes(store, path)
            await fill_conversations(store, count)
            conversations = file_bytes(store, path)
            await fill_outbox(store, count)
            outbox = file_bytes(store, path)
    return {
        "conversation": (conversations - empty) / count,
        "outbox": (outbox - conversations) / count,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)

    redis_runs = [asyncio.run(measure_redis(args.url, args.count)) for _ in range(args.runs)]
    sqlite_runs = [asyncio.run(measure_sqlite(args.count)) for _ in range(args.runs)]

    def median(runs: list[dict[str, float]], name: str) -> float:
        return statistics.median(run[name] for run in runs)

    print(f"{args.count:,} open conversations (REQUEST + CLARIFY each), then {args.count:,}"
          f" queued outbox items; {args.runs} runs, median")
    print(f"{'bytes per':<22} {'Redis used_memory':>18} {'Redis MEMORY USAGE':>19}"
          f" {'SQLite file':>12} {'Redis/SQLite':>13}")
    for label, name in (("open conversation", "conversation"), ("queued outbox item", "outbox")):
        used, keys = median(redis_runs, f"{name}_used"), median(redis_runs, f"{name}_keys")
        on_disk = median(sqlite_runs, name)
        print(f"{label:<22} {used:>18,.0f} {keys:>19,.0f} {on_disk:>12,.0f}"
              f" {used / on_disk:>12.1f}x")
    for n, run in enumerate(redis_runs, start=1):
        print(f"  run {n}: Redis used_memory {run['conversation_used']:,.0f} B/conversation,"
              f" {run['outbox_used']:,.0f} B/outbox item")
    return 0


if __name__ == "__main__":
    sys.exit(main())
