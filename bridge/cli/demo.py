"""`bcn-bridge demo [--port 8080] [--dashboard]`: the whole system on this machine, no
accounts needed; `--dashboard` turns the operator's dashboard on with a fresh token, printed
beside its URL (it lives as long as the demo)."""

from __future__ import annotations

import argparse
import secrets
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
    parser.add_argument("--host", default=None,
                        help="webchat address (default 127.0.0.1; 0.0.0.0 inside a container, "
                             "so that docker run -p 8080:8080 reaches it)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="keep state here (default: a temporary directory)")
    parser.add_argument("--dashboard", action="store_true",
                        help="turn the operator's dashboard on (/dashboard); its sign-in "
                             "token is made up now and printed")
    add_log_options(parser)
    parser.set_defaults(handler=demo_command)


def demo_command(args: argparse.Namespace) -> int:
    from bridge.cli.run import serve
    from bridge.demo import DEMO_ROOM, demo_config, demo_web_host, start_demo_bots
    from bridge.logs import announce, setup_logging

    setup_logging(args.log_level or "INFO", args.log_format or "text")
    with tempfile.TemporaryDirectory(prefix="bcn-bridge-demo-") as scratch:
        data_dir = args.data_dir or Path(scratch)
        host = args.host or demo_web_host()
        config = demo_config(data_dir, web_port=args.port, web_host=host)
        token = secrets.token_urlsafe(24) if args.dashboard else None
        if token is not None:
            config = with_dashboard(config, token)

        async def bots(app: Any) -> list[Any]:
            return await start_demo_bots(app.bcn_url, data_dir)

        def ready(app: Any) -> None:
            # 0.0.0.0 is where it listens, not an address a browser opens.
            base = app.web.url.replace("//0.0.0.0:", "//127.0.0.1:")
            url = f"{base}/?room={DEMO_ROOM}"
            dashboard = (f"  dashboard: {base}/dashboard   sign-in token: {token}\n"
                         if token is not None else "")
            announce(f"\n  bcn-bridge demo is running: open {url}\n{dashboard}"
                     f"  (bots Echo and Rules; try: /ask Rules what is 6*7)   Ctrl-C to stop\n")

        return event_loop.run(serve(config, companions=bots, on_ready=ready))


def with_dashboard(config: Any, token: str) -> Any:
    """The demo's config with `web.dashboard` on, signed in to with `token`."""
    from bridge.dashboard.config import DashboardSection

    dashboard = DashboardSection(enabled=True, token=token)
    return config.model_copy(
        update={"web": config.web.model_copy(update={"dashboard": dashboard})})
