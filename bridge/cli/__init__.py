"""The `bcn-bridge` command line.

Each subcommand lives in its own module under `bridge.cli` and exposes
`register(subparsers)`; this module only wires them together, so adding a
command touches its own file and the list below, nothing else.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Modules that contribute subcommands, in the order `--help` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "bridge.cli.demo",
    "bridge.cli.run",
    "bridge.cli.doctor",
    "bridge.cli.config",
    "bridge.cli.protocol",
    "bridge.cli.conversations",
    "bridge.cli.example_bot",
    "bridge.cli.hub",
    "bridge.cli.slack",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bcn-bridge",
        description="Bridge BCN bots into Discord, Slack, Telegram and webchat.",
    )
    from bridge import __version__

    parser.add_argument("--version", action="version", version=f"bcn-bridge {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(handler(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
