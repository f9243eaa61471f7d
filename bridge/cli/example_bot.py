"""`bcn-bridge example-bot echo|rules --url ws://…/ws/bot --name …`: run an example BCN bot.

The bots are small, deterministic and need no accounts or models, so they are what the
demo, the end-to-end tests and the hub benchmark put on the other side of the bridge.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge import event_loop
from bridge.cli.run import add_log_options
from bridge.retry import Backoff

if TYPE_CHECKING:
    from bridge.bcn.bot import Bot

BOT_KINDS = ("echo", "rules")
EXIT_REFUSED = 1
EXIT_USAGE = 2
ALIVE_EVERY = 10.0
"""Seconds between touches of --alive-file (a liveness probe allows a few missed)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "example-bot", help="run an example BCN bot (echo or rules)", description=__doc__
    )
    parser.add_argument("kind", choices=BOT_KINDS, help="which example bot to run")
    parser.add_argument("--url", required=True, help="the BCN bot endpoint, ws://host:port/ws/bot")
    parser.add_argument("--name", help="the bot's display name (default: Echo or Rules)")
    parser.add_argument("--token-file", help="where to keep the BCN token (created 0600)")
    parser.add_argument("--protocol-version", type=int, default=3,
                        help="BCN protocol version to ask for (default 3)")
    parser.add_argument("--no-stream", action="store_true",
                        help="echo: reply with one final instead of word-by-word deltas")
    parser.add_argument("--word-delay", type=float, default=0.0,
                        help="echo: seconds to wait between streamed words (default 0)")
    parser.add_argument("--heartbeat", type=float, default=60.0,
                        help="seconds between bot.status heartbeats (default 60)")
    parser.add_argument("--history-file", help="keep chat.history in this JSON file")
    parser.add_argument("--alive-file", type=Path,
                        help=f"touch this file every {ALIVE_EVERY:g} s while the bot's event "
                        "loop runs, connected or not (for a container's liveness probe)")
    add_log_options(parser)
    parser.set_defaults(handler=run_example_bot)


def run_example_bot(args: argparse.Namespace) -> int:
    from bridge.bcn.bot import HistoryStore
    from bridge.bcn.examples.echo import build_echo_bot
    from bridge.bcn.examples.rules_bot import build_rules_bot
    from bridge.logs import announce, setup_logging

    if args.log_format:  # so that even a usage error is logged in that format
        setup_logging(args.log_level or "INFO", args.log_format)
    if args.protocol_version < 1 or args.heartbeat <= 0 or args.word_delay < 0:
        announce("--protocol-version must be >= 1, --heartbeat > 0 and --word-delay >= 0",
                 stream=sys.stderr, level=logging.ERROR)
        return EXIT_USAGE
    options: dict[str, Any] = {
        "token_file": args.token_file,
        "protocol_version": args.protocol_version,
        "heartbeat_interval": args.heartbeat,
        "backoff": Backoff(initial=1.0, maximum=30.0),
    }
    if args.name:
        options["name"] = args.name
    try:
        if args.history_file:
            options["history"] = HistoryStore(path=args.history_file)
        bot: Bot
        if args.kind == "echo":
            bot = build_echo_bot(args.url, stream=not args.no_stream, word_delay=args.word_delay,
                                 **options)
        else:
            bot = build_rules_bot(args.url, **options)
    except ValueError as exc:
        announce(f"example-bot: {exc}", stream=sys.stderr, level=logging.ERROR)
        return EXIT_USAGE
    setup_logging(args.log_level or "INFO", args.log_format or "text")
    return event_loop.run(_run(bot, has_token_file=args.token_file is not None,
                               alive_file=args.alive_file))


async def keep_alive(path: Path, every: float = ALIVE_EVERY) -> None:
    """Touch `path` now and every `every` seconds: its age says whether the loop is stuck."""
    while True:
        await asyncio.to_thread(path.touch)
        await asyncio.sleep(every)


async def _run(bot: Bot, *, has_token_file: bool, alive_file: Path | None = None) -> int:
    """Run until BCN refuses the bot for good or SIGTERM/SIGINT asks for an orderly stop."""
    from bridge.bcn import BcnError
    from bridge.logs import announce

    loop = asyncio.get_running_loop()
    stopping: set[asyncio.Task[None]] = set()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, lambda: stopping.add(asyncio.create_task(bot.stop())))
    alive = asyncio.create_task(keep_alive(alive_file)) if alive_file is not None else None
    try:
        await bot.run()
    except BcnError as exc:
        hint = "" if has_token_file else (
            " (run it with --token-file FILE, so that it reconnects as the same bot next "
            "time, or pick another --name)"
        )
        announce(f"example-bot: BCN refused the bot: {exc.message}{hint}",
                 stream=sys.stderr, level=logging.ERROR)
        return EXIT_REFUSED
    finally:
        if alive is not None:
            alive.cancel()
        if stopping:
            await asyncio.wait(stopping)
    return 0
