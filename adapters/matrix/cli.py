"""`bcn-bridge matrix registration -c FILE`: the application-service registration YAML.

Put its output in a file the homeserver reads (Synapse: `app_service_config_files`), then
restart the homeserver. It carries the account's two tokens: keep the file private.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

EXIT_USAGE = 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("matrix", help="Matrix helpers (the appservice registration)")
    commands = parser.add_subparsers(dest="matrix_command", metavar="COMMAND")
    registration = commands.add_parser(
        "registration", help="print the registration file for the homeserver",
        description=__doc__.split("\n\n")[0])
    registration.add_argument("-c", "--config", metavar="FILE", required=True,
                              help="the bridge config with an accounts.matrix entry")
    registration.add_argument("--account", help="the accounts.matrix.<name> entry "
                              "(needed only when there are several)")
    registration.set_defaults(handler=print_registration)
    parser.set_defaults(handler=lambda args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_USAGE


def print_registration(args: argparse.Namespace) -> int:
    import yaml

    from adapters.matrix.config import MatrixAccountConfig
    from adapters.matrix.registration import registration
    from bridge.config import ConfigError
    from bridge.config.schema import load_config

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    accounts = config.accounts.get("matrix", {})
    if args.account is None and len(accounts) == 1:
        args.account = next(iter(accounts))
    account = accounts.get(args.account) if args.account else None
    if account is None:
        names = ", ".join(sorted(accounts)) or "none"
        print(f"{args.config}: name a Matrix account with --account (accounts.matrix: {names})",
              file=sys.stderr)
        return EXIT_USAGE
    settings = MatrixAccountConfig.model_validate(account.model_dump())
    print(f"# bcn-bridge matrix:{args.account}; add this file to the homeserver's "
          "app_service_config_files and keep it private (it holds both tokens)")
    print(yaml.safe_dump(registration(settings), sort_keys=False), end="")
    return 0
