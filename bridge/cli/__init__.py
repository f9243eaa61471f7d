"""The `bcn-bridge` command line.

Each subcommand lives in its own module under `bridge.cli` and exposes
`register(subparsers)`; this module only wires them together, so adding a
command touches its own file and the list below, nothing else. A platform's own
commands (`bcn-bridge discord invite-url`) live in its folder, `adapters/<type>/cli.py`,
and are found through the registry (`bridge.core.registry.cli_modules`).
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
)


def platforms() -> str:
    """The platforms this build has adapters for, from the registry: help never promises
    one that is not there."""
    from bridge.core.registry import ADAPTERS

    names = sorted(kind.capitalize() for kind in ADAPTERS if kind != "webchat")
    if "webchat" in ADAPTERS:
        names.append("the built-in webchat")
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bcn-bridge",
        description=f"Bridge BCN bots into {platforms()}.",
    )
    from bridge import __version__

    parser.add_argument("--version", action="version", version=f"bcn-bridge {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    from bridge.core.registry import cli_modules

    for module in cli_modules().values():
        module.register(subparsers)
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
