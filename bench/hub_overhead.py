"""The hub beside a bare forwarder of the same frames: what the hub's own work costs.

`channel.inbound` → the raw v2 echo bot's final → `channel.deliver`, at a raw channel link,
through `bcn-bridge hub` and through `bench/forwarder.py` (the same frames, nothing else),
each in its own process with its own raw echo bot process. They take turns (`--rounds`), so
a busy moment of the shared machine falls on both alike, and the figures are printed as
ratios of the two from the same run:

- one conversation at a time: p50 latency, hub ÷ forwarder;
- `--conversations` at once for `--seconds`: round trips/s, hub ÷ forwarder;
- server CPU per round trip at that load, hub ÷ forwarder.

`--runs N` repeats the whole comparison and prints the median of each figure.

    python bench/hub_overhead.py [--runs 3] [--messages 400] [--conversations 50]
                                 [--seconds 6] [--rounds 4] [--code DIR]

With `--code DIR` the hub of another checkout (e.g. `git archive <commit> | tar -x -C DIR`)
runs as a third setup in the same turns, so the figures of the code before a change and
after it are measured against the same forwarder in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from hub import hub_settings, hub_url, wait_for_bot  # type: ignore[import-not-found]
from relay import Figures, alternate, hub_driver, line  # type: ignore[import-not-found]
from server_process import server  # type: ignore[import-not-found]

FORWARDER = str(ROOT / "bench" / "forwarder.py")


@contextlib.asynccontextmanager
async def raw_bot(url: str) -> AsyncIterator[None]:
    process = await asyncio.create_subprocess_exec(sys.executable, FORWARDER, "bot", url,
                                                   cwd=ROOT)
    try:
        await wait_for_bot(url)
        yield
    finally:
        process.terminate()
        await process.wait()


@contextlib.asynccontextmanager
async def forwarder() -> AsyncIterator[tuple[str, int]]:
    async with server(FORWARDER, "forwarder") as (words, pid), raw_bot(words[0]):
        yield words[0], pid


@contextlib.asynccontextmanager
async def hub(code: str | None = None) -> AsyncIterator[tuple[str, int]]:
    """`bcn-bridge hub` of this checkout (or of `code`), and the raw echo bot on it."""
    with tempfile.TemporaryDirectory() as scratch:
        config = Path(scratch) / "hub.yaml"
        config.write_text(yaml.safe_dump({"hub": hub_settings(Path(scratch) / "hub")}))
        checkout = code or str(ROOT)
        env = {**os.environ, "PYTHONPATH": checkout}
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bridge.cli", "hub", "--config", str(config),
            "--log-level", "WARNING", cwd=checkout, env=env, stdout=asyncio.subprocess.PIPE)
        try:
            url = await hub_url(process)
            async with raw_bot(url):
                yield url, process.pid
        finally:
            if process.returncode is None:
                process.terminate()
                await process.wait()


async def one_run(messages: int, conversations: int, seconds: float, rounds: int,
                  code: str | None) -> dict[str, float]:
    async with contextlib.AsyncExitStack() as stack:
        setups = {}
        for name, started in (("forwarder", forwarder()), ("hub", hub()),
                              *((("other hub", hub(code)),) if code else ())):
            url, pid = await stack.enter_async_context(started)
            trip = await stack.enter_async_context(hub_driver(url, conversations))
            setups[name] = (Figures(pid), trip)
        await alternate(list(setups.values()), rounds, messages, conversations, seconds)
    base = setups["forwarder"][0]
    print(f" {messages} messages one at a time; {conversations} conversations at once, "
          f"{seconds:g} s; taking turns in {rounds} rounds")
    for name, (figures, _) in setups.items():
        print(line(name, figures, "serial"))
        print(line("", figures, "concurrent"))
    figures: dict[str, float] = {}
    for name, (each, _) in setups.items():
        if each is base:
            continue
        figures[f"{name} p50 ÷ forwarder"] = (statistics.median(each.serial)
                                              / statistics.median(base.serial))
        figures[f"{name} rt/s ÷ forwarder"] = each.rate / base.rate
        figures[f"{name} CPU/rt ÷ forwarder"] = each.concurrent_cpu / base.concurrent_cpu
    print("  => " + "   ".join(f"{key} {value:.2f}x" for key, value in figures.items()))
    return figures


async def run(runs: int, messages: int, conversations: int, seconds: float, rounds: int,
              code: str | None) -> None:
    print("channel.inbound → raw v2 echo final → channel.deliver: `bcn-bridge hub` beside a "
          "bare forwarder of the same frames" + (f" and the hub of {code}" if code else ""))
    results = []
    for n in range(runs):
        print(f"run {n + 1}:")
        results.append(await one_run(messages, conversations, seconds, rounds, code))
    if runs > 1:
        print(f"median of {runs} runs:")
        for key in results[0]:
            print(f"  {key:<28} {statistics.median(r[key] for r in results):.2f}x   "
                  f"(runs: {', '.join(f'{r[key]:.2f}' for r in results)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--messages", type=int, default=400)
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--code", help="also the hub of this checkout, in the same turns")
    args = parser.parse_args()
    asyncio.run(run(args.runs, args.messages, args.conversations, args.seconds, args.rounds,
                    args.code))


if __name__ == "__main__":
    main()
