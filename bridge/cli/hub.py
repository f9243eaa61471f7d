"""`bcn-bridge hub --config FILE [--listen HOST:PORT]`: run the embedded BCN hub alone.

Reads the `hub:` section of the file (the same section the bridge's config carries),
serves `/ws/bot`, `/ws/channel` and `/healthz`, and stops cleanly on SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import Any

from bridge import event_loop

EXIT_FAILED = 1
EXIT_USAGE = 2
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "hub", help="run the embedded BCN hub", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--config", required=True, metavar="FILE",
                        help="YAML file with a 'hub:' section")
    parser.add_argument("--listen", metavar="HOST:PORT", help="override hub.listen")
    parser.add_argument("--log-level", default="INFO",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"), help="default INFO")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from bridge.config import ConfigError, load_section
    from bridge.hub.config import HubConfig
    from bridge.listen import parse_listen

    try:
        config = load_section(args.config, "hub", HubConfig)
    except ConfigError as exc:
        print(f"bcn-bridge hub: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.listen:
        try:
            parse_listen(args.listen)
        except ValueError as exc:
            print(f"bcn-bridge hub: --listen: {exc}", file=sys.stderr)
            return EXIT_USAGE
        config = config.model_copy(update={"listen": args.listen})
    logging.basicConfig(level=args.log_level, format=LOG_FORMAT)
    return event_loop.run(serve(config))


async def serve(config: Any) -> int:
    """Run the hub until SIGINT or SIGTERM, then close every connection and the database."""
    from bridge.hub import Hub

    hub = Hub(config)
    try:
        await hub.start()
    except OSError as exc:
        print(f"bcn-bridge hub: cannot listen on {config.listen}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"hub listening on {hub.url} (bots: {hub.url}/ws/bot, links: {hub.url}/ws/channel)",
          flush=True)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await hub.stop()
    return 0
