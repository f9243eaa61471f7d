"""`bcn-bridge discord invite-url -c FILE`: the link that adds each Discord account's bot to
a server with the permissions and scopes the bridge needs (see docs/discord.md).

It reads the config like `run` does and prints one URL per Discord account; it needs no
network. The Discord adapter is imported only when the command runs, so the core and the
other commands never load discord.py.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bridge.cli.platform import EXIT_USAGE, command_group, read_accounts


def register(subparsers: Any) -> None:
    actions = command_group(subparsers, "discord", "Discord helpers (invite-url)",
                            "Helpers for the Discord accounts of a config file.")
    invite = actions.add_parser(
        "invite-url", help="print the URL that adds the bot to a server with its permissions"
    )
    invite.add_argument("-c", "--config", required=True, metavar="FILE", help="config file")
    invite.set_defaults(handler=run_invite_url)


def run_invite_url(args: argparse.Namespace) -> int:
    found = read_accounts(args.config, "discord")
    if found is None:
        return EXIT_USAGE
    _, accounts = found
    from adapters.discord.invite import application_id, invite_url

    code = 0
    for name, account in accounts.items():
        client_id = application_id(account)  # type: ignore[arg-type]
        if client_id is None:
            print(f"discord:{name}: cannot tell the application id from the token; set "
                  f"accounts.discord.{name}.application_id", file=sys.stderr)
            code = EXIT_USAGE
            continue
        prefix = f"discord:{name}: " if len(accounts) > 1 else ""
        print(f"{prefix}{invite_url(client_id)}")
    return code
