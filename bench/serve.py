"""A server for the relay benches, in a process of its own so its CPU time can be read apart
from the client's.

    python bench/serve.py relay --rooms 50 [--hub ws://…]   # bridge (+ embedded hub) + echo
    python bench/serve.py hub                                # hub + echo, no bridge
    python bench/serve.py relay --huge 2000000 [--max-reply-chars N]
        # the echo bot answers a message starting "huge" with that many characters

Prints one line `READY <url>` (the webchat WebSocket for `relay`, the hub's ws:// URL for
`hub`) once the echo bot is online, then serves until killed (with BENCH_PROFILE=FILE in
the environment it writes a CPU-time profile there when terminated). With `--hub`, the bridge links
to that hub instead of embedding one (and runs no bot: the hub's own echo answers).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from hub import LINK_TOKEN, hub_settings, wait_for_bot  # type: ignore[import-not-found]

from bridge import event_loop
from bridge.app import BridgeApp
from bridge.bcn.bot import IncomingMessage, Run
from bridge.bcn.examples.echo import build_echo_bot, make_echo_handler
from bridge.config.schema import BridgeConfig
from bridge.core import registry
from bridge.hub import Hub, HubConfig

HUGE_LINE = "a line of a very long bot reply, made to measure what a huge one costs\n"
HUGE_END = "END OF THE HUGE REPLY"


def huge_reply(size: int) -> str:
    """About `size` characters of lines, `HUGE_END` last (gone if the bridge cut the reply)."""
    return HUGE_LINE * max(1, size // len(HUGE_LINE)) + HUGE_END


def relay_config(data_dir: Path, rooms: int, hub_url: str | None,
                 max_reply_chars: int | None = None) -> BridgeConfig:
    settings: dict[str, Any] = {
        "store": f"sqlite:///{data_dir / 'bridge.db'}",
        "web": {"listen": "127.0.0.1:0"},
        "bindings": [{"channel": "webchat:main", "chat": f"room{n}", "group": "bench",
                      "protocol": {"enabled": False}} for n in range(rooms)],
    }
    if max_reply_chars is not None:
        settings["relay"] = {"max_reply_chars": max_reply_chars}
    if hub_url is None:
        settings |= {"hub": hub_settings(data_dir / "hub"), "bcn": {"url": "embedded"}}
    else:
        settings |= {"bcn": {"url": hub_url, "token": LINK_TOKEN}}
    webchat = registry.account_config_model("webchat")()
    return BridgeConfig.model_validate(settings).model_copy(
        update={"accounts": {"webchat": {"main": webchat}}}
    )


async def echo(url: str, huge: int = 0) -> asyncio.Task[None]:
    bot = build_echo_bot(url + "/ws/bot", stream=False, apply_env=False)
    if huge:
        answer_echo = make_echo_handler(stream=False)

        @bot.on_message
        async def answer(message: IncomingMessage, run: Run) -> str | None:
            if message.text.startswith("huge"):
                return huge_reply(huge)
            return await answer_echo(message, run)
    task = asyncio.create_task(bot.run())
    await wait_for_bot(url)
    return task


async def terminated() -> None:
    """Until SIGTERM: then `serve` returns as any command stops, and a profile (if asked
    for) is written. A signal handler raising into the loop instead lands in whatever
    callback runs at that moment, which the loop may catch and log as a transport error."""
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()


async def serve(mode: str, rooms: int, hub_url: str | None, huge: int = 0,
                max_reply_chars: int | None = None) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = Path(scratch)
        if mode == "hub":
            async with Hub(HubConfig.model_validate(hub_settings(data_dir / "hub"))) as hub:
                bot = await echo(hub.url)
                event_loop.settle()  # as `bcn-bridge hub` does once it is up
                print(f"READY {hub.url}", flush=True)
                await terminated()
                bot.cancel()
            return
        app = BridgeApp(relay_config(data_dir, rooms, hub_url, max_reply_chars))
        await app.start()
        bot = await echo(app.bcn_url, huge) if hub_url is None else None
        assert app.relay is not None and app.web is not None
        await app.relay.link.wait_ready(30)
        event_loop.settle()  # as `bcn-bridge run` does once it is up
        print(f"READY {app.web.url.replace('http://', 'ws://')}/webchat/main/ws", flush=True)
        try:
            await terminated()
        finally:
            if bot is not None:
                bot.cancel()
            await app.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["relay", "hub"])
    parser.add_argument("--rooms", type=int, default=50)
    parser.add_argument("--hub", help="link to this hub instead of embedding one")
    parser.add_argument("--huge", type=int, default=0,
                        help="characters the echo bot answers a message starting 'huge' with")
    parser.add_argument("--max-reply-chars", type=int, help="the bridge's relay.max_reply_chars")
    args = parser.parse_args()
    import logging

    logging.basicConfig(level=logging.WARNING)
    profile_to = os.environ.get("BENCH_PROFILE")
    serving = serve(args.mode, args.rooms, args.hub, args.huge, args.max_reply_chars)
    if not profile_to:
        event_loop.run(serving)  # the loop `bcn-bridge` runs on
        return
    # CPU time, not wall time: on a shared machine a wall-clock profile blames whatever
    # was running when the process was descheduled (usually a socket send).
    profile = cProfile.Profile(time.process_time)
    profile.enable()
    try:
        event_loop.run(serving)
    finally:
        profile.disable()
        profile.dump_stats(profile_to)


if __name__ == "__main__":
    main()
