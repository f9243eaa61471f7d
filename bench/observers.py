"""Backpressure: 100 observer bots at 100 messages/s, and a canary round trip meanwhile.

Processes, as deployed: the hub alone (`bcn-bridge hub`), the observer bots (SDK `Bot`s,
`--observer-processes` processes sharing `--observers` bots, each spending
`--observe-work-us` µs of CPU on every inject; one process by default, which then cannot
keep up with 10,000 injects/s — the slow consumers this bench is about), an echo bot (the
canary's responder), and this process — a channel link that sends `--rate` messages/s for
`--seconds` (open loop: the next one goes at its time whatever happened to the last),
each `deliver: observe` in a group of every observer, so each one is a `chat.inject` to
every observer. Beside it, on a second link, two canaries, each one message at a time to the
echo bot, timed from `channel.inbound` to its `final` delivery: one in the observers' own
room (the echo bot drives it; the observers observe the canary and its answer too), one in a
room of its own.

Every second it prints each canary's latest round trip (or how long the one on its way has
waited), the hub's RSS and CPU share (and the observers'), what the observers received,
the backlog (injects the hub accepted that no observer has seen, less those it reports shed
or cut off), and the hub's queue counters from `/metrics` (`bcn_hub_bot_queue_max`,
`bcn_hub_injects_shed_total`, … where the hub has them). After the flood it waits up to
`--drain` s for the backlog to drain (or for 10 s in which the observers receive nothing)
and for the canaries on their way. Each run ends with a summary; with `--runs N` the runs
go one after another and the medians are printed. Figures and how to read them:
docs/performance.md, "Backpressure".

    python bench/observers.py [--runs 3] [--seconds 30] [--rate 100] [--observers 100]
                              [--observer-processes 1] [--observe-work-us 50] [--drain 120]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from hub import LINK_TOKEN, BenchLink, bench_link, cpu_seconds  # type: ignore[import-not-found]

sys.path.insert(0, str(ROOT))
from bridge.bcn import BcnError, ConnectionClosed, Request

SELF = str(Path(__file__).resolve())
CANARY_GAP = 0.25
"""Seconds between one canary's reply and the next canary."""
STALLED = 10.0
"""After the flood, the observers receiving nothing for this long means nothing more comes."""


def observer_name(n: int) -> str:
    return f"Obs{n:03d}"


def observer_token(n: int) -> str:
    return f"bench-observer-token-{n:03d}"


ECHO_TOKEN = "bench-echo-token-0"


def hub_settings(data_dir: Path, observers: int) -> dict[str, Any]:
    names = [observer_name(n) for n in range(observers)]
    return {
        "listen": "127.0.0.1:0",
        "data_dir": str(data_dir),
        "link_tokens": [LINK_TOKEN],
        "bots": [{"name": "Echo", "token": ECHO_TOKEN},
                 *({"name": observer_name(n), "token": observer_token(n)}
                   for n in range(observers))],
        "groups": [{"id": "flood", "name": "Flood", "driver": "Echo", "bots": ["Echo", *names]},
                   {"id": "canary", "name": "Canary", "driver": "Echo", "bots": ["Echo"]}],
    }


# ---------------------------------------------------------------------- worker processes
async def observer_worker(url: str, first: int, count: int, work_us: float) -> None:
    """`count` SDK observer bots; prints `COUNT <injects seen>` every half second.

    Each inject costs `work_us` µs of CPU (what a bot does with what it observes: store
    it, index it), so that the observers are slower than the flood on any machine.
    """
    from bridge.bcn.bot import Bot, IncomingMessage

    seen = 0
    work = work_us / 1e6

    async def observe(message: IncomingMessage) -> None:
        nonlocal seen
        if message.text.startswith("flood "):  # not the canary's own messages
            seen += 1
        until = time.perf_counter() + work
        while time.perf_counter() < until:
            pass

    bots = [Bot(url + "/ws/bot", token=observer_token(n), apply_env=False, on_observe=observe)
            for n in range(first, first + count)]
    await asyncio.gather(*(bot.start(timeout=60) for bot in bots))
    print("READY", flush=True)
    try:
        while True:
            await asyncio.sleep(0.5)
            print(f"COUNT {seen}", flush=True)
    finally:
        await asyncio.gather(*(bot.stop() for bot in bots))


async def echo_worker(url: str) -> None:
    from bridge.bcn.examples.echo import build_echo_bot

    bot = build_echo_bot(url + "/ws/bot", stream=False, apply_env=False, token=ECHO_TOKEN)
    await bot.start(timeout=60)
    print("READY", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await bot.stop()


# ---------------------------------------------------------------------- processes
@dataclass
class Worker:
    process: asyncio.subprocess.Process
    count: int = 0

    async def follow(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            if line.startswith(b"COUNT "):
                self.count = int(line.split()[1])


async def start_process(*args: str, stderr: Any = None) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, *args, cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=stderr)


async def ready(process: asyncio.subprocess.Process, marker: bytes, timeout: float = 90) -> bytes:
    assert process.stdout is not None
    async with asyncio.timeout(timeout):
        while True:
            line = await process.stdout.readline()
            if not line:
                raise RuntimeError(f"a bench process exited before printing {marker!r}")
            if marker in line:
                return line


async def stop_process(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 15)
        except TimeoutError:
            process.kill()
            await process.wait()


@dataclass
class Rig:
    url: str
    hub_pid: int
    workers: list[Worker]
    hub_log: Path

    @property
    def observed(self) -> int:
        return sum(worker.count for worker in self.workers)


@contextlib.asynccontextmanager
async def rig(observers: int, processes: int, work_us: float) -> AsyncIterator[Rig]:
    """The hub, the observer processes and the echo bot, all running; stopped after."""
    import yaml

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "hub.yaml"
        config.write_text(yaml.safe_dump({"hub": hub_settings(Path(tmp) / "hub", observers)}))
        hub_log = Path(tmp) / "hub.log"
        started: list[asyncio.subprocess.Process] = []
        followers: list[asyncio.Task[None]] = []
        with hub_log.open("wb") as log_file:
            try:
                hub = await start_process("-m", "bridge.cli", "hub", "--config", str(config),
                                          "--log-level", "WARNING", stderr=log_file)
                started.append(hub)
                url = (await ready(hub, b"hub listening on")).decode().split()[3]
                workers = []
                per = -(-observers // processes)
                for first in range(0, observers, per):
                    count = min(per, observers - first)
                    process = await start_process(SELF, "--worker", "observers", "--url", url,
                                                  "--first", str(first), "--count", str(count),
                                                  "--observe-work-us", str(work_us))
                    started.append(process)
                    workers.append(Worker(process))
                echo = await start_process(SELF, "--worker", "echo", "--url", url)
                started.append(echo)
                for process in started[1:]:
                    await ready(process, b"READY")
                followers = [asyncio.create_task(worker.follow()) for worker in workers]
                yield Rig(url, hub.pid, workers, hub_log)
            finally:
                for process in reversed(started):
                    await stop_process(process)
                for task in followers:
                    task.cancel()
                await asyncio.gather(*followers, return_exceptions=True)
        lines = hub_log.read_text(errors="replace").splitlines()
        if lines:
            print(f"  hub log: {len(lines)} line(s) at WARNING or above; the last ones:")
            for line in lines[-3:]:
                print(f"    {line[:160]}")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def hub_metrics(http: aiohttp.ClientSession, url: str) -> dict[str, float]:
    """The hub's `/metrics` samples without labels (and `name{label}` with), by name."""
    try:
        async with asyncio.timeout(2):
            async with http.get(url.replace("ws://", "http://") + "/metrics") as response:
                text = await response.text()
    except (aiohttp.ClientError, TimeoutError):
        return {}
    out = {}
    for line in text.splitlines():
        if line.startswith("bcn_hub_") and " " in line:
            name, value = line.rsplit(" ", 1)
            with contextlib.suppress(ValueError):
                out[name] = float(value)
    return out


# ---------------------------------------------------------------------- the link side
class CanaryLink(BenchLink):
    """`bench/hub.py`'s link, whose waiting canary also ends on an `error` or `system`
    output (a refused delivery is an answer too, not a canary lost)."""

    async def on_request(self, req: Request) -> dict[str, Any]:
        params = req.params
        if params.get("kind") in ("error", "system"):
            future = self.waiting.pop(params.get("source_msg_id") or "", None)
            if future is not None and not future.done():
                future.set_result(params.get("text") or "")
        return await super().on_request(req)


def inbound(binding_id: str, msg_id: str, text: str, observe: bool) -> dict[str, Any]:
    params: dict[str, Any] = {
        "binding_id": binding_id, "msg_id": msg_id, "text": text,
        "sender": {"user_id": "u-bench", "name": "bench", "is_bot": False}}
    if observe:
        params["deliver"] = "observe"
    return params


@dataclass
class Flood:
    """The open-loop sender's tallies."""

    sent: int = 0
    answered: int = 0
    refused: int = 0
    answer_latencies: list[float] = field(default_factory=list)

    @property
    def outstanding(self) -> int:
        return self.sent - self.answered - self.refused


async def flood(link: CanaryLink, rate: float, seconds: float, tally: Flood) -> None:
    """`rate` messages/s for `seconds`, each at its time; answers are tallied as they come."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    binding_id = link.binding_ids[0]

    def answered(future: asyncio.Future[Any], sent_at: float) -> None:
        if future.cancelled() or future.exception() is not None:
            tally.refused += 1
        else:
            tally.answered += 1
            tally.answer_latencies.append(loop.time() - sent_at)

    while (due := start + tally.sent / rate) < start + seconds:
        await asyncio.sleep(max(0.0, due - loop.time()))
        sent_at = loop.time()
        try:
            future = await link.conn.send_request(
                "channel.inbound",
                inbound(binding_id, f"flood-{tally.sent}-{time.time_ns()}",
                        f"flood message {tally.sent}", observe=True))
        except ConnectionClosed:
            return
        tally.sent += 1
        future.add_done_callback(lambda f, at=sent_at: answered(f, at))


@dataclass
class Canary:
    """Round trips of one message at a time to the echo bot, and the one on its way."""

    latencies: list[float] = field(default_factory=list)
    started_at: float | None = None

    def waiting(self, now: float) -> float:
        return 0.0 if self.started_at is None else now - self.started_at


async def canary(link: CanaryLink, binding: int, tally: Canary, stop: asyncio.Event) -> None:
    """One message at a time to the echo bot: `channel.inbound`, its answer, its final."""
    loop = asyncio.get_running_loop()
    n = 0
    while not stop.is_set():
        n += 1
        msg_id = f"canary-{binding}-{n}-{time.time_ns()}"
        reply: asyncio.Future[str] = loop.create_future()
        link.waiting[msg_id] = reply
        tally.started_at = loop.time()
        try:
            await link.conn.request("channel.inbound", inbound(
                link.binding_ids[binding], msg_id, f"@Echo canary {n}", False))
            await reply
        except (BcnError, ConnectionClosed, TimeoutError) as exc:
            print(f"  canary {n} failed: {exc}")
            return
        tally.latencies.append(loop.time() - tally.started_at)
        tally.started_at = None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), CANARY_GAP)


# ---------------------------------------------------------------------- one run
QUEUE_METRICS = (
    ("bot queue max", "bcn_hub_bot_queue_max"),
    ("shed", "bcn_hub_injects_shed_total"),
    ("cut", "bcn_hub_slow_bots_disconnected_total"),
)


@dataclass
class Summary:
    room_p50: float
    room_max: float
    other_p50: float
    other_max: float
    rss_max: float
    backlog_max: float
    queue_max: float
    delivered: float
    shed: float
    drain: float
    flood_rate: float
    hub_cpu: float


def backlog(metrics: dict[str, float], accepted: int, observers: int, observed: int) -> int:
    """Injects the hub took on for the observers that none of them has seen yet."""
    lost = metrics.get("bcn_hub_injects_shed_total", 0) + metrics.get("bcn_hub_injects_cut_total",
                                                                      0)
    return max(0, int(accepted * observers - observed - lost))


def shown(tally: Canary, now: float) -> str:
    """The latest round trip, or `N+` while the one on its way has waited longer."""
    waited = tally.waiting(now)
    last = tally.latencies[-1] if tally.latencies else 0.0
    return f"{waited:.1f}+" if waited > max(1.0, last) else f"{last:.3f}"


def worst(tally: Canary, now: float) -> tuple[float, float]:
    """Median and maximum round trip, counting the one still on its way as it stands."""
    latencies = [*tally.latencies, tally.waiting(now)] if tally.started_at else tally.latencies
    return statistics.median(latencies or [0.0]), max(latencies or [0.0])


async def one_run(args: argparse.Namespace, run_no: int) -> Summary:
    print(f"run {run_no}: {args.observers} observers in {args.observer_processes} process(es) "
          f"({args.observe_work_us:g} µs of work per inject), {args.rate:g} messages/s for "
          f"{args.seconds:g} s = {args.rate * args.observers:,.0f} injects/s")
    async with rig(args.observers, args.observer_processes, args.observe_work_us) as bench, \
            aiohttp.ClientSession() as http, \
            bench_link(bench.url, 0, groups=["flood"], name="flood", kind=CanaryLink,
                       request_timeout=600) as flood_link, \
            bench_link(bench.url, 0, groups=["flood", "canary"], name="canary", kind=CanaryLink,
                       request_timeout=600) as canary_link:
        loop = asyncio.get_running_loop()
        flood_tally, room, other, stop = Flood(), Canary(), Canary(), asyncio.Event()
        canaries = [asyncio.create_task(canary(canary_link, 0, room, stop)),
                    asyncio.create_task(canary(canary_link, 1, other, stop))]
        cpu_before = cpu_seconds(bench.hub_pid) or 0.0
        start = loop.time()
        cpu_mark = (cpu_before, sum(cpu_seconds(w.process.pid) or 0.0 for w in bench.workers),
                    start)
        sender = asyncio.create_task(flood(flood_link, args.rate, args.seconds, flood_tally))
        rss_max = queue_max = backlog_max = 0.0
        metrics: dict[str, float] = {}
        flood_end: float | None = None
        last_change, last_observed = start, -1
        print("     t  sent  answered  pending  canary s: room   other  hub RSS MB  CPU hub  obs"
              "  observed   backlog  " + "  ".join(label for label, _ in QUEUE_METRICS))
        deadline = start + args.seconds + args.drain
        while loop.time() < deadline:
            await asyncio.sleep(1.0)
            now = loop.time()
            metrics = await hub_metrics(http, bench.url) or metrics  # unanswered: as it was
            rss = rss_mb(bench.hub_pid)
            hub_cpu_now = cpu_seconds(bench.hub_pid) or 0.0
            observers_cpu_now = sum(cpu_seconds(w.process.pid) or 0.0 for w in bench.workers)
            hub_share = (hub_cpu_now - cpu_mark[0]) / (now - cpu_mark[2])
            observers_share = (observers_cpu_now - cpu_mark[1]) / (now - cpu_mark[2])
            cpu_mark = (hub_cpu_now, observers_cpu_now, now)
            rss_max = max(rss_max, rss)
            queue_max = max(queue_max, metrics.get("bcn_hub_bot_queue_max", 0.0))
            observed = bench.observed
            behind = backlog(metrics, flood_tally.answered, args.observers, observed)
            backlog_max = max(backlog_max, behind)
            extra = "  ".join(f"{metrics[name]:{len(label)}.0f}" if name in metrics
                              else " " * (len(label) - 1) + "-" for label, name in QUEUE_METRICS)
            print(f"  {now - start:4.0f} {flood_tally.sent:5d} {flood_tally.answered:9d} "
                  f"{flood_tally.outstanding:8d} {shown(room, now):>14} {shown(other, now):>7} "
                  f"{rss:11.1f} {hub_share:7.0%} {observers_share:4.0%} {observed:9d} "
                  f"{behind:9d}  {extra}")
            if observed != last_observed:
                last_change, last_observed = now, observed
            if sender.done() and flood_tally.outstanding == 0 and flood_end is None:
                flood_end = now
            if (flood_end is not None and room.started_at is None and other.started_at is None
                    and (behind == 0 or now - last_change >= STALLED)):
                break
        stop.set()
        sender.cancel()
        await asyncio.gather(sender, return_exceptions=True)
        now = loop.time()
        (room_p50, room_max), (other_p50, other_max) = worst(room, now), worst(other, now)
        for label, tally in (("room", room), ("other", other)):
            if tally.started_at is not None:
                print(f"  the {label} canary was still on its way after "
                      f"{tally.waiting(now):.1f} s")
        for task in canaries:
            task.cancel()
        await asyncio.gather(*canaries, return_exceptions=True)
        hub_cpu = (cpu_seconds(bench.hub_pid) or 0.0) - cpu_before
        observed = bench.observed
        expected = flood_tally.sent * args.observers
        drain = max(0.0, last_change - (start + args.seconds))
    summary = Summary(
        room_p50=room_p50, room_max=room_max, other_p50=other_p50, other_max=other_max,
        rss_max=rss_max, backlog_max=backlog_max, queue_max=queue_max,
        delivered=observed / max(1, expected),
        shed=metrics.get("bcn_hub_injects_shed_total", 0.0), drain=drain,
        flood_rate=flood_tally.answered / args.seconds, hub_cpu=hub_cpu)
    print(f"  => canary in the observers' room p50 {room_p50:.3f} s, max {room_max:.3f} s; in "
          f"another room p50 {other_p50:.3f} s, max {other_max:.3f} s; hub RSS max "
          f"{rss_max:.0f} MB; backlog max {backlog_max:,.0f} injects, still arriving "
          f"{drain:.0f} s after the flood; bot queue max {queue_max:.0f}; observers got "
          f"{observed:,} of {expected:,} injects ({summary.delivered:.0%}), "
          f"{summary.shed:,.0f} shed; flood answered {summary.flood_rate:.0f}/s; hub CPU "
          f"{hub_cpu:.1f} s")
    return summary


async def run(args: argparse.Namespace) -> None:
    summaries = [await one_run(args, n + 1) for n in range(args.runs)]
    if len(summaries) < 2:
        return
    print(f"median of {len(summaries)} runs:")
    for label, key, unit in (("room canary p50", "room_p50", "s"),
                             ("room canary max", "room_max", "s"),
                             ("other canary p50", "other_p50", "s"),
                             ("other canary max", "other_max", "s"),
                             ("hub RSS max", "rss_max", "MB"),
                             ("backlog max", "backlog_max", "injects"),
                             ("drain after flood", "drain", "s"),
                             ("bot queue max", "queue_max", "requests"),
                             ("injects delivered", "delivered", "fraction"),
                             ("injects shed", "shed", ""),
                             ("flood answered", "flood_rate", "msg/s"),
                             ("hub CPU", "hub_cpu", "s")):
        values = [getattr(s, key) for s in summaries]
        shown = ", ".join(f"{v:.3f}" for v in values)
        print(f"  {label:<18} {statistics.median(values):10.3f} {unit:<8} ({shown})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=30.0, help="how long the flood lasts")
    parser.add_argument("--rate", type=float, default=100.0, help="flood messages per second")
    parser.add_argument("--observers", type=int, default=100)
    parser.add_argument("--observer-processes", type=int, default=1,
                        help="processes the observer bots share (one: they cannot keep up)")
    parser.add_argument("--observe-work-us", type=float, default=50.0,
                        help="CPU µs each observer spends on each inject")
    parser.add_argument("--drain", type=float, default=120.0,
                        help="how long to wait after the flood for what is on its way")
    parser.add_argument("--worker", choices=["observers", "echo"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    import logging

    logging.basicConfig(level=logging.ERROR)
    if args.worker == "observers":
        asyncio.run(observer_worker(args.url, args.first, args.count, args.observe_work_us))
    elif args.worker == "echo":
        asyncio.run(echo_worker(args.url))
    else:
        if args.runs < 1 or args.seconds <= 0 or args.rate <= 0 or args.observers < 1:
            parser.error("--runs, --seconds, --rate and --observers must be positive")
        asyncio.run(run(args))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
