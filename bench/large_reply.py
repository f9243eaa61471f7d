"""One 2 MB bot reply in one room; what does another room feel meanwhile?

For the same server process and the same machine load, prints:

- a second room's round trips with nothing else going on (the baseline);
- the same room's round trips while the echo bot's 2 MB reply to the first room goes
  through the bridge (cut at `relay.max_reply_chars`, the default 100,000 characters), and
  how long the first room waited for its whole (cut) reply;
- the same with the cap raised above 2 MB, so that the whole reply is split and posted;
- for each, the second room's worst round trip as a multiple of its baseline p50.

Servers run in their own process (`bench/serve.py --huge`), driven at the webchat
WebSocket as a browser would.

    python bench/large_reply.py [--size 2000000] [--baseline 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from hub import percentile  # type: ignore[import-not-found]
from relay import Tab, server, tabs_for  # type: ignore[import-not-found]
from serve import HUGE_END  # type: ignore[import-not-found]

TRUNCATED = "reply truncated"


async def huge_reply(tab: Tab) -> tuple[float, int]:
    """Ask for the huge reply; seconds until its last part is shown, and characters shown."""
    started = time.perf_counter()
    await tab.ws.send_str(json.dumps({"type": "message", "text": "huge please",
                                      "client_message_id": "huge-1"}))
    shown = 0
    while True:
        data = (await tab.ws.receive()).data
        frame = json.loads(data)
        message = frame.get("message") or {}
        if message.get("sender", {}).get("name") != "Echo" or message.get("kind") != "final":
            continue
        html = message.get("html") or ""
        shown += len(html)
        if HUGE_END in html or TRUNCATED in html:
            return time.perf_counter() - started, shown


async def measure(size: int, baseline_count: int, cap: int | None) -> dict[str, float]:
    args = ["relay", "--rooms", "2", "--huge", str(size)]
    if cap is not None:
        args += ["--max-reply-chars", str(cap)]
    async with server(*args) as (url, _pid), aiohttp.ClientSession() as session:
        asker, other = await tabs_for(session, url, 2)
        for _ in range(30):  # warm up
            await other.round_trip()
        baseline = [await other.round_trip() for _ in range(baseline_count)]
        reply = asyncio.create_task(huge_reply(asker))
        during: list[float] = []
        while not reply.done() or len(during) < 5:
            during.append(await other.round_trip())
        waited, shown = await reply
    return {"baseline_p50": percentile(baseline, 0.5), "during_p50": percentile(during, 0.5),
            "during_max": max(during), "during_count": len(during), "waited": waited,
            "shown": shown}


def report(label: str, figures: dict[str, float]) -> None:
    ratio = figures["during_max"] / figures["baseline_p50"]
    print(f"  {label:<36} whole reply shown after {figures['waited']:6.2f} s "
          f"({figures['shown']:,.0f} chars)")
    print(f"  {'':<36} other room: baseline p50 {figures['baseline_p50'] * 1000:6.2f} ms, "
          f"meanwhile p50 {figures['during_p50'] * 1000:6.2f} ms, "
          f"worst {figures['during_max'] * 1000:7.2f} ms over {figures['during_count']:.0f} "
          f"round trips (worst = {ratio:.1f}x baseline p50)")


async def run(size: int, baseline_count: int) -> None:
    print(f"a {size:,}-character bot reply in one room, round trips in another (webchat)")
    report("cut at 100,000 chars (the default)", await measure(size, baseline_count, None))
    report(f"cap raised to {size + 1_000_000:,}", await measure(size, baseline_count,
                                                                  size + 1_000_000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2_000_000)
    parser.add_argument("--baseline", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(run(args.size, args.baseline))


if __name__ == "__main__":
    main()
