"""`bcn-bridge slack manifest --mode socket|http`: the Slack app manifest to create the app from.

With `-c FILE` the manifest uses that config's command words and the account's events path
(and its mode, unless `--mode` says otherwise), so what Slack sends is what the bridge
expects. The manifest goes to stdout as YAML (or `--json`); notes go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from bridge.cli.platform import EXIT_USAGE, command_group, read_accounts


def register(subparsers: Any) -> None:
    actions = command_group(subparsers, "slack", "Slack helpers (the app manifest)")
    manifest = actions.add_parser(
        "manifest", help="print the manifest to create the Slack app from",
        description=__doc__.split("\n\n")[0],
    )
    manifest.add_argument("--mode", choices=("socket", "http"),
                          help="socket (default) or http; http needs the public --url")
    manifest.add_argument("--name", default="bcn-bridge", help="the app's name in Slack")
    manifest.add_argument("--url", metavar="URL",
                          help="http mode: the bridge's public https base URL")
    manifest.add_argument("--account", default="main", help="the accounts.slack.<name> entry")
    manifest.add_argument("-c", "--config", metavar="FILE",
                          help="take command words, path and mode from this config")
    manifest.add_argument("--json", action="store_true", help="print JSON instead of YAML")
    manifest.set_defaults(handler=print_manifest)


def print_manifest(args: argparse.Namespace) -> int:
    import yaml

    from adapters.slack.manifest import PLACEHOLDER_URL, manifest
    from bridge.config.sections import CommandNames

    mode, path, commands = args.mode, f"/slack/{args.account}/events", CommandNames()
    if args.config:
        found = read_accounts(args.config, "slack", required=False)
        if found is None:
            return EXIT_USAGE
        config, accounts = found
        commands = config.commands
        account = accounts.get(args.account)
        if account is not None:
            mode = mode or getattr(account, "mode", None)
            path = account.events_path(args.account)  # type: ignore[attr-defined]
    mode = mode or "socket"
    if mode == "http" and not args.url:
        print(f"note: replace {PLACEHOLDER_URL} with the bridge's public URL (or pass --url)",
              file=sys.stderr)
    document = manifest(mode=mode, name=args.name, public_url=args.url, path=path,
                        commands=commands)
    if args.json:
        print(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        print(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), end="")
    return 0
