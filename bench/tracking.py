"""Conversation tracking figures: throughput, latency, sweep time, memory per conversation.

Run: `python bench/tracking.py [--sizes 1000,10000,100000] [--messages 4000]`.

For each size it grows one SQLite store (temp file, WAL) to that many open conversations,
then tracks a mixed batch of messages (half new REQUESTs, a quarter HANDOFFs and a quarter
RESPONSEs on existing conversations) timing each `track`, then times one `sweep` that finds
about 1% of the conversations due. Last, it measures what an open conversation costs in the
memory store with tracemalloc. It prints figures; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bridge.protocol import Depth, MessageType, ProtocolMessage
from bridge.store import open_store
from bridge.tracking import Tracker

BASE = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
DUE_EVERY = 100  # one conversation in this many is opened early enough to be due at sweep


def request(i: int) -> ProtocolMessage:
    return ProtocolMessage(
        type=MessageType.REQUEST,
        to=f"Worker{i % 50}",
        from_=f"Lotbot{i % 7}",
        request_id=f"lotbot-{i:08x}",
        task=f"Summarise thread #{i} and list the open questions for the weekly review",
        context="User asked in #planning",
        depth=Depth(1, 5),
        priority="normal",
    )


def follow_up(i: int, kind: MessageType) -> ProtocolMessage:
    if kind is MessageType.HANDOFF:
        return ProtocolMessage(
            type=kind, to="Specialist", from_=f"Worker{i % 50}", request_id=f"lotbot-{i:08x}",
            task=f"Summarise thread #{i}", depth=Depth(2, 5), callback=f"@Worker{i % 50}",
        )  # fmt: skip
    return ProtocolMessage(
        type=kind, to=f"Lotbot{i % 7}", from_=f"Worker{i % 50}", request_id=f"lotbot-{i:08x}",
        result=f"Thread #{i}: three open questions", status="done", depth=Depth(2, 5),
    )  # fmt: skip


def opened_at(i: int) -> datetime:
    """Most conversations open at BASE; every DUE_EVERY-th one 31 minutes earlier."""
    return BASE - timedelta(minutes=31) if i % DUE_EVERY == 0 else BASE


async def populate(tracker: Tracker, start: int, stop: int) -> None:
    for i in range(start, stop):
        await tracker.track(request(i), now=opened_at(i))


def batch(
    existing: int, next_id: int, count: int, used: set[int], rng: random.Random
) -> list[ProtocolMessage]:
    """Half new REQUESTs, a quarter HANDOFFs, a quarter RESPONSEs on untouched existing ids.

    Conversations meant to be due at the sweep are left alone, so the sweep has its work.
    """
    candidates = [i for i in range(existing) if i % DUE_EVERY and i not in used]
    picked = rng.sample(candidates, min(count // 2, len(candidates)))
    used.update(picked)
    messages = [request(next_id + n) for n in range(count - len(picked))]
    messages += [follow_up(i, MessageType.HANDOFF) for i in picked[: len(picked) // 2]]
    messages += [follow_up(i, MessageType.RESPONSE) for i in picked[len(picked) // 2 :]]
    rng.shuffle(messages)
    return messages


async def measure_sqlite(sizes: list[int], per_size: int) -> list[dict[str, float]]:
    rng = random.Random(7)
    used: set[int] = set()
    rows: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.db"
        async with open_store(f"sqlite:///{path}") as store:
            tracker = Tracker(store)
            populated = 0
            for size in sizes:
                started = time.perf_counter()
                await populate(tracker, populated, size)
                fill_seconds = time.perf_counter() - started
                fill_rate = (size - populated) / fill_seconds
                populated = size

                messages = batch(size, populated, min(per_size, size), used, rng)
                latencies: list[float] = []
                started, cpu_started = time.perf_counter(), time.process_time()
                for message in messages:
                    before = time.perf_counter()
                    await tracker.track(message, now=BASE + timedelta(seconds=1))
                    latencies.append(time.perf_counter() - before)
                elapsed = time.perf_counter() - started
                cpu = time.process_time() - cpu_started
                populated += sum(1 for m in messages if m.type is MessageType.REQUEST)

                started = time.perf_counter()
                closed = await tracker.sweep(now=BASE + timedelta(minutes=1))
                sweep_seconds = time.perf_counter() - started

                latencies.sort()
                rows.append({
                    "size": size,
                    "fill_rate": fill_rate,
                    "rate": len(messages) / elapsed,
                    "mean_us": statistics.fmean(latencies) * 1e6,
                    "cpu_us": cpu / len(messages) * 1e6,
                    "p50_us": latencies[len(latencies) // 2] * 1e6,
                    "p99_us": latencies[int(len(latencies) * 0.99)] * 1e6,
                    "sweep_ms": sweep_seconds * 1e3,
                    "swept": len(closed),
                    "db_mb": path.stat().st_size / 1e6,
                })  # fmt: skip
    return rows


async def memory_per_conversation(count: int) -> float:
    """Bytes the memory store keeps per open conversation (messages themselves freed)."""
    async with open_store("memory://") as store:
        tracker = Tracker(store)
        gc.collect()
        tracemalloc.start()
        baseline = tracemalloc.get_traced_memory()[0]
        for i in range(count):
            await tracker.track(request(i), now=BASE)
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - baseline
        tracemalloc.stop()
        assert len(await tracker.list(status="open")) == count
        return retained / count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument(
        "--messages", type=int, default=4000, help="tracked per size (at most size)"
    )
    parser.add_argument("--memory-count", type=int, default=20_000)
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]

    rows = asyncio.run(measure_sqlite(sizes, args.messages))
    print(
        "SQLite store (temp file, WAL, synchronous=NORMAL);"
        f" min(size, {args.messages}) messages tracked per size"
    )
    header = (
        f"{'open':>8} {'fill msg/s':>11} {'track msg/s':>12} {'mean µs':>8} {'CPU µs':>7}"
        f" {'p50 µs':>7}"
        f" {'p99 µs':>7} {'sweep ms':>9} {'swept':>6} {'db MB':>6}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['size']:>8,} {row['fill_rate']:>11,.0f} {row['rate']:>12,.0f}"
            f" {row['mean_us']:>8.0f} {row['cpu_us']:>7.0f} {row['p50_us']:>7.0f}"
            f" {row['p99_us']:>7.0f}"
            f" {row['sweep_ms']:>9.1f} {row['swept']:>6} {row['db_mb']:>6.1f}"
        )
    first, last = rows[0], rows[-1]
    print(
        f"per-message cost at {last['size']:,} open vs {first['size']:,}:"
        f" {last['mean_us'] / first['mean_us']:.2f}x (target ≤ 2x);"
        f" throughput at {last['size']:,}: {last['rate']:,.0f} msg/s (target ≥ 5,000)"
    )
    per_conversation = asyncio.run(memory_per_conversation(args.memory_count))
    print(
        f"memory store: {per_conversation:,.0f} bytes per open conversation"
        f" ({args.memory_count:,} conversations, tracemalloc; target ≤ 2,048)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
