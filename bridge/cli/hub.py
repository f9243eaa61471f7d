"""`bcn-bridge hub -c FILE [--listen HOST:PORT]`: run the embedded BCN hub alone.

Reads the `hub:` section of the file (the same section the bridge's config carries) and its
`log:` section when there is one, serves `/ws/bot`, `/ws/channel`, `/healthz` and
`/metrics`, and stops cleanly on SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import signal
import sys
from typing import Any

from bridge import event_loop
from bridge.cli.run import add_log_options

EXIT_FAILED = 1
EXIT_USAGE = 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "hub", help="run the embedded BCN hub", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("-c", "--config", required=True, metavar="FILE",
                        help="YAML file with a 'hub:' section")
    parser.add_argument("--listen", metavar="HOST:PORT", help="override hub.listen")
    add_log_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from bridge.config import ConfigError, load_section
    from bridge.config.sections import LogSection
    from bridge.hub.config import HubConfig
    from bridge.listen import parse_listen
    from bridge.logs import announce, setup_logging

    if args.log_format:  # so that even a config error is logged in that format
        setup_logging(args.log_level or "INFO", args.log_format)
    try:
        config = load_section(args.config, "hub", HubConfig)
        logs = _log_section(args.config, LogSection)
    except ConfigError as exc:
        announce(f"bcn-bridge hub: {exc}", stream=sys.stderr, level=logging.ERROR)
        return EXIT_USAGE
    if args.listen:
        try:
            parse_listen(args.listen)
        except ValueError as exc:
            announce(f"bcn-bridge hub: --listen: {exc}", stream=sys.stderr, level=logging.ERROR)
            return EXIT_USAGE
        config = config.model_copy(update={"listen": args.listen})
    setup_logging(args.log_level or logs.level, args.log_format or logs.format)
    return event_loop.run(serve(config))


def _log_section(path: str, model: type[Any]) -> Any:
    """The file's `log:` section, or its defaults when the file has none."""
    from bridge.config import ConfigError, load_section

    try:
        return load_section(path, "log", model)
    except ConfigError as exc:
        if any(issue.message == "missing section 'log:'" for issue in exc.issues):
            return model()
        raise


async def serve(config: Any) -> int:
    """Run the hub until SIGINT or SIGTERM, then close every connection and the database."""
    from bridge.hub import Hub
    from bridge.logs import announce

    hub = Hub(config)
    try:
        await hub.start()
    except OSError as exc:
        hint = ("; is another hub running? Pass --listen HOST:PORT or change hub.listen"
                if exc.errno == errno.EADDRINUSE else "")
        announce(f"bcn-bridge hub: cannot listen on {config.listen}: {exc.strerror or exc}{hint}",
                 stream=sys.stderr, level=logging.ERROR)
        return EXIT_FAILED
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    announce(f"hub listening on {hub.url} (bots: {hub.url}/ws/bot, links: {hub.url}/ws/channel)")
    event_loop.settle()
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await hub.stop()
    return 0
