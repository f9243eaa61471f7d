"""What every platform's own commands share (`adapters/<type>/cli.py`): the command group
`bcn-bridge <type> ACTION`, and reading that platform's accounts from a config file.

A platform's commands live in its folder and are found through the registry; these two
helpers keep each of them to what is its own (see docs/adding-a-platform.md).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

    from bridge.config.schema import BridgeConfig

EXIT_USAGE = 2


def command_group(subparsers: Any, name: str, help: str, description: str | None = None) -> Any:
    """Add `bcn-bridge <name> ACTION` and return its subparsers, to add the actions to.
    Without an action it prints its help to stderr and exits 2."""
    parser = subparsers.add_parser(name, help=help, description=description or help)
    actions = parser.add_subparsers(dest=f"{name}_command", metavar="ACTION")

    def usage(_: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return EXIT_USAGE

    parser.set_defaults(handler=usage)
    return actions


def read_accounts(
    path: str, channel_type: str, *, required: bool = True
) -> tuple[BridgeConfig, dict[str, BaseModel]] | None:
    """The config file at `path` and its `accounts.<channel_type>`; None once it has said
    why not on stderr: the file is invalid, or (when `required`) it has no such account."""
    from bridge.config import ConfigError, load_config

    try:
        config = load_config(path)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return None
    accounts = config.accounts.get(channel_type) or {}
    if required and not accounts:
        print(f"{path}: no accounts.{channel_type} in this file", file=sys.stderr)
        return None
    return config, accounts
