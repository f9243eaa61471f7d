"""`bcn-bridge matrix registration -c FILE`: the application-service registration YAML.

Put its output in a file the homeserver reads (Synapse: `app_service_config_files`), then
restart the homeserver. It carries the account's two tokens: keep the file private. The
Matrix library is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bridge.cli.platform import EXIT_USAGE, command_group, read_accounts


def register(subparsers: Any) -> None:
    actions = command_group(subparsers, "matrix", "Matrix helpers (registration)",
                            "Helpers for the Matrix accounts of a config file.")
    registration = actions.add_parser(
        "registration", help="print the registration file for the homeserver",
        description=__doc__.split("\n\n")[0])
    registration.add_argument("-c", "--config", metavar="FILE", required=True,
                              help="the bridge config with an accounts.matrix entry")
    registration.add_argument("--account", help="the accounts.matrix.<name> entry "
                              "(needed only when there are several)")
    registration.set_defaults(handler=print_registration)


def print_registration(args: argparse.Namespace) -> int:
    found = read_accounts(args.config, "matrix")
    if found is None:
        return EXIT_USAGE
    _, accounts = found
    name = args.account or (next(iter(accounts)) if len(accounts) == 1 else None)
    account = accounts.get(name) if name else None
    if account is None:
        print(f"{args.config}: name a Matrix account with --account (accounts.matrix: "
              f"{', '.join(sorted(accounts))})", file=sys.stderr)
        return EXIT_USAGE
    import yaml

    from adapters.matrix.config import MatrixAccountConfig
    from adapters.matrix.registration import registration

    settings = MatrixAccountConfig.model_validate(account.model_dump())
    print(f"# bcn-bridge matrix:{name}; add this file to the homeserver's "
          "app_service_config_files and keep it private (it holds both tokens)")
    print(yaml.safe_dump(registration(settings), sort_keys=False), end="")
    return 0
