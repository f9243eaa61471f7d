"""`bcn-bridge demo [--port 8080]`: the whole system on this machine, no accounts needed."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from bridge import event_loop
from bridge.cli.run import add_log_options


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo", help="embedded hub + webchat + example bots; open the printed URL"
    )
    parser.add_argument("--port", type=int, default=8080, help="webchat port (default 8080)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="keep state here (default: a temporary directory)")
    add_log_options(parser)
    parser.set_defaults(handler=demo_command)


def demo_command(args: argparse.Namespace) -> int:
    from bridge.cli.run import serve
    from bridge.demo import DEMO_ROOM, demo_config, start_demo_bots
    from bridge.logs import announce, setup_logging

    setup_logging(args.log_level or "INFO", args.log_format or "text")
    with tempfile.TemporaryDirectory(prefix="bcn-bridge-demo-") as scratch:
        data_dir = args.data_dir or Path(scratch)
        config = demo_config(data_dir, web_port=args.port)

        async def bots(app: Any) -> list[Any]:
            return await start_demo_bots(app.bcn_url, data_dir)

        def ready(app: Any) -> None:
            url = f"{app.web.url}/?room={DEMO_ROOM}"
            announce(f"\n  bcn-bridge demo is running: open {url}\n"
                     f"  (bots Echo and Rules; try: /ask Rules what is 6*7)   Ctrl-C to stop\n")

        return event_loop.run(serve(config, companions=bots, on_ready=ready))
