"""Conversation tracking figures: throughput, latency, sweep stalls, memory per conversation.

Run: `python bench/tracking.py [--sizes 1000,10000,100000] [--messages 4000] [--rounds 4]
     [--redis URL | --no-redis] [--redis-size 100000] [--code DIR]`.

For each size it grows one SQLite store (temp file, WAL) to that many open conversations, then
tracks a mixed batch of messages (half new REQUESTs, a quarter HANDOFFs and a quarter RESPONSEs
on existing conversations) timing each `track`. Beside it, in the same run and at the same size,
it times the same-run baseline of the tracked rate: a bare `INSERT` + `COMMIT` per row (`BEGIN
IMMEDIATE`, `INSERT`, `COMMIT`, rows built beforehand) into a table shaped like the
conversations table, with its indexes, in a WAL file of its own set up as the store's (its
`connect`, so the same PRAGMAs, and its background checkpoint thread) and grown to the same
number of rows; as many rows as messages tracked. The two take turns (`--rounds`: a quarter of
the messages, then a quarter of the rows, ...), so a busy moment of the shared machine weighs on
both; the ratio tracked / baseline is the figure to compare. Then it runs two sweeps that each
find about 1% of the conversations due: the sweep as the relay runs it (batches, yielding to the
loop in between), then, on the second 1%, the same sweep in one unbatched go (what it was
before), the same-run baseline. During each sweep a heartbeat task takes every turn the loop
gives it; the longest gap between two of its turns is the longest the sweep kept the loop from
everyone else ("stall"). The same two sweeps then run on a Redis store of `--redis-size` open
conversations (skipped, saying so, without a server). Last, it measures what an open
conversation costs in the memory store with tracemalloc. The SQLite and Redis figures are taken
on the loop and collector settings `bcn-bridge` runs with (`bridge.event_loop.run`). It prints
figures; nothing here asserts a time.

With `--code DIR` it measures something else: the SQLite tracking and its baseline (no
sweeps, no Redis, no memory figure) for this checkout and for another (DIR, e.g. `git archive
<commit> | tar -x -C DIR`), each in a process of its own running this script with `bridge`
imported from its checkout, the two taking turns (one turn of one process at a time, the order
reversed every round), and prints each one's ratio to its own baseline and the quotient of the
two ratios: what a change does to tracking, against the code before it in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# `--code DIR` runs this script again with BENCH_CODE=DIR: `bridge` is then imported from DIR
# (and so are the helpers of DIR's `bench/` where it has them); the workload is this file's.
if os.environ.get("BENCH_CODE"):
    sys.path.insert(0, os.environ["BENCH_CODE"])

from bench.redis_size import bounded, drop, fresh_prefix
from bridge import event_loop
from bridge.protocol import Depth, MessageType, ProtocolMessage
from bridge.store import Store, open_store
from bridge.store.redis.store import RedisStore
from bridge.store.sqlite.checkpoint import start_checkpoints
from bridge.store.sqlite.connection import connect
from bridge.tracking import Tracker
from bridge.tracking.tracker import SWEEP_BATCH

BASE = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
DUE_EVERY = 100  # one conversation in this many is due at each of the two sweeps
# The first sweep (batched) closes the ones opened 31 minutes before BASE; the second
# (unbatched, the baseline) those opened 30.5 minutes before, still waiting at the first.
FIRST_SWEEP = BASE - timedelta(seconds=45)
SECOND_SWEEP = BASE + timedelta(minutes=1)
UNBATCHED = 10**9
SETTLE = 1.0  # seconds without writes before each sweep (see both_sweeps)


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
    """Most conversations open at BASE; two in every DUE_EVERY open early (one per sweep)."""
    if i % DUE_EVERY == 0:
        return BASE - timedelta(minutes=31)
    if i % DUE_EVERY == DUE_EVERY // 2:
        return BASE - timedelta(minutes=30, seconds=30)
    return BASE


def due_at_a_sweep(i: int) -> bool:
    return i % DUE_EVERY in (0, DUE_EVERY // 2)


async def populate(tracker: Tracker, start: int, stop: int) -> None:
    for i in range(start, stop):
        await tracker.track(request(i), now=opened_at(i))


def batch(
    existing: int, next_id: int, count: int, used: set[int], rng: random.Random
) -> list[ProtocolMessage]:
    """Half new REQUESTs, a quarter HANDOFFs, a quarter RESPONSEs on untouched existing ids.

    Conversations meant to be due at the sweep are left alone, so the sweep has its work.
    """
    candidates = [i for i in range(existing) if not due_at_a_sweep(i) and i not in used]
    picked = rng.sample(candidates, min(count // 2, len(candidates)))
    used.update(picked)
    messages = [request(next_id + n) for n in range(count - len(picked))]
    messages += [follow_up(i, MessageType.HANDOFF) for i in picked[: len(picked) // 2]]
    messages += [follow_up(i, MessageType.RESPONSE) for i in picked[len(picked) // 2 :]]
    rng.shuffle(messages)
    return messages


class Baseline:
    """A bare `INSERT` + `COMMIT` per row into an indexed WAL table: the tracked rate's
    same-run baseline.

    The table is the conversations table as the store's schema creates it, with every index
    on it (copied from a migrated store's `sqlite_master`), in a file of its own set up as the
    store sets up its own: opened with the store's `connect` (WAL, `synchronous=NORMAL`, the
    same checkpoint threshold) and checkpointed by the store's background thread
    (`start_checkpoints`). A timed row is one `BEGIN IMMEDIATE`, one `INSERT` of a tuple built
    beforehand, one `COMMIT`: what a durable write of one row costs with no Python around the
    statement. (Without the thread the baseline paid the inline checkpoints the store's
    thread spares it, every ~1,400 rows, and ran at about half the rate.)
    """

    def __init__(self, path: Path, schema_from: Path) -> None:
        self.db = connect(str(path))
        source = sqlite3.connect(schema_from)
        try:
            schema = source.execute(
                "SELECT sql FROM sqlite_master WHERE tbl_name = 'conversations'"
                " AND sql IS NOT NULL ORDER BY type DESC"  # the table before its indexes
            ).fetchall()
        finally:
            source.close()
        for (sql,) in schema:
            self.db.execute(sql)
        columns = self.db.execute("SELECT * FROM conversations LIMIT 0").description
        self.insert = f"INSERT INTO conversations VALUES ({', '.join('?' * len(columns))})"
        self.rows = 0
        self.checkpoints = start_checkpoints(str(path))

    def row(self, n: int) -> tuple[object, ...]:
        """Row `n`, shaped like a freshly tracked REQUEST's."""
        created = int(BASE.timestamp() * 1e6) + n
        return (
            f"base-{n:08x}", "REQUEST", f"Lotbot{n % 7}", f"Worker{n % 50}", "open",
            f"Summarise thread #{n} and list the open questions for the weekly review",
            1, 5, f"Lotbot{n % 7}", None, created, created, created + 1_800_000_000,
            "REQUEST", random.getrandbits(63),
        )  # fmt: skip

    def grow(self, size: int) -> None:
        """Up to `size` rows, in one transaction (not timed)."""
        self.db.execute("BEGIN IMMEDIATE")
        self.db.executemany(self.insert, (self.row(n) for n in range(self.rows, size)))
        self.db.execute("COMMIT")
        # The grow's WAL back in the file and the WAL emptied: the timed rows must not pay for
        # rewriting a WAL the kernel is still writing back (the first 1,000 rows after a grow
        # to 100,000 ran at a quarter of the rate of the next ones).
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.rows = max(self.rows, size)

    def timed(self, count: int) -> tuple[float, float]:
        """Wall and CPU seconds of `count` rows, each its own INSERT and COMMIT."""
        rows = [self.row(n) for n in range(self.rows, self.rows + count)]
        self.rows += count
        db, insert = self.db, self.insert
        started, cpu_started = time.perf_counter(), time.process_time()
        for row in rows:
            db.execute("BEGIN IMMEDIATE")
            db.execute(insert, row)
            db.execute("COMMIT")
        return time.perf_counter() - started, time.process_time() - cpu_started

    def close(self) -> None:
        if self.checkpoints is not None:
            self.checkpoints.stop()
        self.db.close()


async def watched_sweep(tracker: Tracker, now: datetime, batch_size: int) -> dict[str, float]:
    """Sweep while a heartbeat task notes the longest the loop went without giving it a turn.

    Beside that wall-clock gap it notes the CPU time this thread spent in it: the two agree
    when the loop was busy with the sweep, and part with the CPU time shorter when the
    operating system gave the core to another process (a shared machine's noise).
    """
    longest = longest_cpu = 0.0
    sweeping = True

    async def heartbeat() -> None:
        nonlocal longest, longest_cpu
        last, last_cpu = time.perf_counter(), time.thread_time()
        while sweeping:
            await asyncio.sleep(0)
            turn, turn_cpu = time.perf_counter(), time.thread_time()
            if turn - last > longest:
                longest, longest_cpu = turn - last, turn_cpu - last_cpu
            last, last_cpu = turn, turn_cpu

    beat = asyncio.create_task(heartbeat())
    await asyncio.sleep(0)  # the heartbeat takes its first turn
    started = time.perf_counter()
    closed = 0
    async for batch in tracker.sweep_batches(now=now, batch_size=batch_size):
        closed += len(batch)
    seconds = time.perf_counter() - started
    sweeping = False
    await beat
    return {
        "sweep_ms": seconds * 1e3, "stall_ms": longest * 1e3,
        "stall_cpu_ms": longest_cpu * 1e3, "swept": closed,
    }  # fmt: skip


async def both_sweeps(tracker: Tracker) -> dict[str, float]:
    """The batched sweep on one 1%, then the unbatched baseline on the other 1%.

    Each starts after SETTLE seconds without writes, as a relay's sweep (every 15 s) meets
    a store that is not being written flat out: SQLite's background checkpoint has caught
    up by then, so what is measured is the sweep, not a checkpoint it happened to trigger.
    """
    await asyncio.sleep(SETTLE)
    batched = await watched_sweep(tracker, FIRST_SWEEP, SWEEP_BATCH)
    await asyncio.sleep(SETTLE)
    unbatched = await watched_sweep(tracker, SECOND_SWEEP, UNBATCHED)
    return {
        **batched,
        "base_sweep_ms": unbatched["sweep_ms"],
        "base_stall_ms": unbatched["stall_ms"],
        "base_stall_cpu_ms": unbatched["stall_cpu_ms"],
        "base_swept": unbatched["swept"],
    }


async def measure_sqlite(
    sizes: list[int],
    per_size: int,
    rounds: int,
    sweeps: bool = True,
    gate: Callable[[], None] | None = None,
) -> list[dict[str, float]]:
    """The SQLite figures per size; `gate`, if given, is called before each turn of tracked
    messages and baseline rows (and may block: it is how `--code` makes two processes take
    turns)."""
    rng = random.Random(7)
    used: set[int] = set()
    rows: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.db"
        async with open_store(f"sqlite:///{path}") as store:
            tracker = Tracker(store)
            baseline = Baseline(Path(folder) / "baseline.db", schema_from=path)
            populated = 0
            for size in sizes:
                started = time.perf_counter()
                await populate(tracker, populated, size)
                fill_seconds = time.perf_counter() - started
                fill_rate = (size - populated) / fill_seconds
                populated = size
                baseline.grow(size)

                messages = batch(size, populated, min(per_size, size), used, rng)
                latencies: list[float] = []
                elapsed = cpu = base_elapsed = base_cpu = 0.0
                turn = -(-len(messages) // rounds)
                for first in range(0, len(messages), turn):
                    chunk = messages[first : first + turn]
                    if gate is not None:
                        gate()
                    started, cpu_started = time.perf_counter(), time.process_time()
                    for message in chunk:
                        before = time.perf_counter()
                        await tracker.track(message, now=BASE + timedelta(seconds=1))
                        latencies.append(time.perf_counter() - before)
                    elapsed += time.perf_counter() - started
                    cpu += time.process_time() - cpu_started
                    wall, its_cpu = baseline.timed(len(chunk))
                    base_elapsed += wall
                    base_cpu += its_cpu
                populated += sum(1 for m in messages if m.type is MessageType.REQUEST)

                swept = await both_sweeps(tracker) if sweeps else {}
                latencies.sort()
                rows.append({
                    "size": size,
                    "fill_rate": fill_rate,
                    "rate": len(messages) / elapsed,
                    "cpu_rate": len(messages) / cpu,
                    "base_rate": len(messages) / base_elapsed,
                    "base_cpu_rate": len(messages) / base_cpu,
                    "mean_us": statistics.fmean(latencies) * 1e6,
                    "cpu_us": cpu / len(messages) * 1e6,
                    "p50_us": latencies[len(latencies) // 2] * 1e6,
                    "p99_us": latencies[int(len(latencies) * 0.99)] * 1e6,
                    "max_ms": latencies[-1] * 1e3,
                    **swept,
                    "db_mb": path.stat().st_size / 1e6,
                })  # fmt: skip
            baseline.close()
    return rows


async def measure_redis(url: str, size: int) -> dict[str, float]:
    """Both sweeps on a Redis store grown to `size` open conversations (its own prefix)."""
    run_url, prefix = fresh_prefix(url)
    store: Store = await open_store(run_url)
    assert isinstance(store, RedisStore)
    try:
        tracker = Tracker(store)
        started = time.perf_counter()
        await bounded(size, lambda i: tracker.track(request(i), now=opened_at(i)))
        fill_rate = size / (time.perf_counter() - started)
        return {"size": size, "fill_rate": fill_rate, **await both_sweeps(tracker)}
    finally:
        await drop(store, prefix)
        await store.close()


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


def ratio_lines(rows: list[dict[str, float]]) -> list[str]:
    """The tracked rate beside the same-run baseline's, per size."""
    lines = [
        f"{'open':>8} {'track msg/s':>12} {'base rows/s':>12} {'ratio':>7}"
        f" {'per CPU s':>10} {'base per CPU s':>15} {'ratio':>7}"
    ]
    lines.append("-" * len(lines[0]))
    for row in rows:
        lines.append(
            f"{row['size']:>8,} {row['rate']:>12,.0f} {row['base_rate']:>12,.0f}"
            f" {row['rate'] / row['base_rate']:>6.3f}x {row['cpu_rate']:>10,.0f}"
            f" {row['base_cpu_rate']:>15,.0f} {row['cpu_rate'] / row['base_cpu_rate']:>6.3f}x"
        )
    return lines


def wait_for_turn() -> None:
    """In a `--code` child: say it is ready for a turn, and wait until told to take it."""
    print("WAIT", flush=True)
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("the parent bench went away")


def side_by_side(
    checkouts: list[str], sizes: str, messages: int, rounds: int
) -> list[list[dict[str, float]]]:
    """The SQLite tracking and baseline of each checkout (`bridge` imported from it), each in
    a process of its own, taking turns: one turn of one process at a time, the order of the
    processes reversed every round, and no turn while another process grows its store."""
    args = ["--sizes", sizes, "--messages", str(messages), "--rounds", str(rounds), "--turns"]
    children = [
        subprocess.Popen(
            [sys.executable, __file__, *args],
            env={**os.environ, "BENCH_CODE": str(Path(code).resolve())},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for code in checkouts
    ]

    def said(child: subprocess.Popen[str]) -> str:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line:
            raise SystemExit(f"a bench process ended early (exit code {child.wait()})")
        return line.strip()

    try:
        lines = [said(child) for child in children]  # each has grown its first store
        order = list(range(len(children)))
        while any(line == "WAIT" for line in lines):
            for index in order:
                if lines[index] == "WAIT":
                    stdin = children[index].stdin
                    assert stdin is not None
                    stdin.write("go\n")
                    stdin.flush()
                    lines[index] = said(children[index])  # its turn is over (and its next grow)
            order.reverse()
        for child in children:
            child.wait()
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
    return [json.loads(line.removeprefix("ROWS ")) for line in lines]


def print_header(header: str) -> None:
    print(header)
    print("-" * len(header))


def sweep_line(label: str, row: dict[str, float]) -> str:
    return (
        f"{label:<17} {row['swept']:>5} {row['sweep_ms']:>9.1f} {row['stall_ms']:>9.1f}"
        f" {row['stall_cpu_ms']:>8.1f} {row['base_swept']:>6} {row['base_sweep_ms']:>8.1f}"
        f" {row['base_stall_ms']:>10.1f} {row['base_stall_cpu_ms']:>8.1f}"
        f" {row['base_stall_ms'] / row['stall_ms']:>7.1f}x"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument(
        "--messages", type=int, default=4000, help="tracked per size (at most size)"
    )
    parser.add_argument("--memory-count", type=int, default=20_000)
    parser.add_argument("--redis", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--no-redis", action="store_true")
    parser.add_argument("--redis-size", type=int, default=100_000)
    parser.add_argument(
        "--rounds", type=int, default=4, help="turns of tracked messages and baseline rows"
    )
    parser.add_argument(
        "--code",
        help="instead: this checkout's SQLite tracking beside that of the checkout DIR, each"
        " against its own baseline, the two processes taking turns",
        metavar="DIR",
    )
    parser.add_argument("--turns", action="store_true", help=argparse.SUPPRESS)  # for --code
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    if args.turns:  # a child of --code: WAIT before each turn, then the rows as JSON
        rows = event_loop.run(
            measure_sqlite(sizes, args.messages, args.rounds, sweeps=False, gate=wait_for_turn)
        )
        print("ROWS " + json.dumps(rows), flush=True)
        return 0
    if args.code:
        return compare(args.code, args.sizes, args.messages, args.rounds)

    # On the loop and with the collector settings `bcn-bridge` runs with: a generation-2
    # collection under the default thresholds lands inside a Redis sweep's batch.
    rows = event_loop.run(measure_sqlite(sizes, args.messages, args.rounds))
    print(
        "SQLite store (temp file, WAL, synchronous=NORMAL);"
        f" min(size, {args.messages}) messages tracked per size"
    )
    print_header(
        f"{'open':>8} {'fill msg/s':>11} {'track msg/s':>12} {'per CPU s':>10} {'mean µs':>8}"
        f" {'CPU µs':>7} {'p50 µs':>7} {'p99 µs':>7} {'max ms':>7} {'db MB':>6}"
    )
    for row in rows:
        print(
            f"{row['size']:>8,} {row['fill_rate']:>11,.0f} {row['rate']:>12,.0f}"
            f" {row['cpu_rate']:>10,.0f} {row['mean_us']:>8.0f} {row['cpu_us']:>7.0f}"
            f" {row['p50_us']:>7.0f} {row['p99_us']:>7.0f} {row['max_ms']:>7.1f}"
            f" {row['db_mb']:>6.1f}"
        )
    first, last = rows[0], rows[-1]
    print(
        f"per-message cost at {last['size']:,} open vs {first['size']:,}:"
        f" {last['mean_us'] / first['mean_us']:.2f}x (target ≤ 2x);"
        f" throughput at {last['size']:,}: {last['rate']:,.0f} msg/s (target ≥ 5,000)"
    )
    print(
        "\nTracked vs the same-run baseline: a bare INSERT + COMMIT per row (BEGIN IMMEDIATE,"
        " INSERT, COMMIT) into the conversations table with its indexes, alone in a WAL file"
        " opened with the store's connect() and checkpointed by the store's thread, holding as"
        " many rows as there are open conversations; as many rows as messages tracked, taking"
        f" turns in {args.rounds} rounds; ratio = tracked / baseline"
    )
    for text in ratio_lines(rows):
        print(text)
    print(
        f"tracked / baseline at {last['size']:,}: {last['rate'] / last['base_rate']:.3f}x"
        f" ({last['rate']:,.0f} vs {last['base_rate']:,.0f} per second; target ≥ 0.35x)"
    )

    print(
        f"\nTimeout sweeps, ~1% of the open conversations due each: batched ({SWEEP_BATCH} per"
        " batch, a yield between) vs unbatched (the same run's baseline, as before);"
        " stall = longest the loop gave another task no turn (its CPU = this thread's CPU"
        " time in that gap); ratio = base stall / stall;"
        f" each sweep starts after {SETTLE:g} s without writes"
    )
    print_header(
        f"{'store, open':<17} {'swept':>5} {'sweep ms':>9} {'stall ms':>9} {'its CPU':>8}"
        f" {'base':>6} {'base ms':>8} {'base stall':>10} {'its CPU':>8} {'ratio':>8}"
    )
    for row in rows:
        print(sweep_line(f"SQLite, {row['size']:,}", row))
    if args.no_redis:
        print("Redis: not run (--no-redis)")
    else:
        try:
            redis_row = event_loop.run(measure_redis(args.redis, args.redis_size))
        except OSError as exc:
            print(f"Redis: NOT MEASURED, no server: {exc}")
        else:
            print(sweep_line(f"Redis, {redis_row['size']:,}", redis_row))
            print(f"  (Redis filled at {redis_row['fill_rate']:,.0f} msg/s, 64 in flight)")
    worst = max(row["stall_ms"] for row in rows)
    print(f"longest batched-sweep stall, SQLite: {worst:.1f} ms (target ≤ 10 ms)")

    per_conversation = asyncio.run(memory_per_conversation(args.memory_count))
    print(
        f"\nmemory store: {per_conversation:,.0f} bytes per open conversation"
        f" ({args.memory_count:,} conversations, tracemalloc; target ≤ 2,048)"
    )
    return 0


def compare(code: str, sizes: str, messages: int, rounds: int) -> int:
    """`--code DIR`: this checkout's tracking beside that of DIR, each against its baseline."""
    this, other = side_by_side([str(ROOT), code], sizes, messages, rounds)
    print(
        f"SQLite tracking of this checkout and of {code}, each in a process of its own (temp"
        " file, WAL) beside its own baseline (a bare INSERT + COMMIT per row, as in the"
        f" default run), the two processes taking turns in {rounds} rounds"
    )
    for label, rows in (("this checkout", this), (code, other)):
        print(f"\n{label}:")
        for text in ratio_lines(rows):
            print(text)
    print()
    for mine, theirs in zip(this, other, strict=True):
        ours, its = mine["rate"] / mine["base_rate"], theirs["rate"] / theirs["base_rate"]
        print(
            f"=> at {mine['size']:,} open: this checkout {ours:.3f}x its baseline, the other"
            f" {its:.3f}x: {ours / its:.2f}x the other's (tracked per CPU s:"
            f" {mine['cpu_rate'] / theirs['cpu_rate']:.2f}x the other's)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
