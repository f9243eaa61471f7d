"""`bcn-bridge config check FILE` and `bcn-bridge config schema`.

`check` is what a deployer runs before a restart: it loads the file exactly as the
bridge would and prints either a short summary or every problem with its line. It never
prints a secret: the summary shows names and addresses, not tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

EXIT_INVALID = 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "config",
        help="check a config file or print its JSON Schema",
        description="Check a bcn-bridge config file, or print the JSON Schema of one.",
    )
    parser.set_defaults(handler=lambda _args: _usage(parser))
    commands = parser.add_subparsers(dest="config_command", metavar="ACTION")

    check = commands.add_parser("check", help="validate a config file and summarize it")
    check.add_argument("file", help="the YAML config file")
    check.set_defaults(handler=run_check)

    schema = commands.add_parser("schema", help="print the JSON Schema of the config file")
    schema.add_argument("--indent", type=int, default=2, help="JSON indentation (default 2)")
    schema.set_defaults(handler=run_schema)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_INVALID


UNSET_STAND_IN = "unset-environment-variable-stand-in"
"""What an unset `${NAME}` is read as while checking the rest of a file (long enough for any
minimum length, so only that value's own checks can complain, and those are left out)."""


def run_check(args: argparse.Namespace) -> int:
    """Check the file as `run` would, except that environment variables not set here (the
    secrets of a deployment, typically) are listed rather than failed: the file is checked
    with a stand-in for each, and only problems of the file itself fail it."""
    from bridge.config import ConfigError, load_config

    unset: dict[str, None] = {}
    try:
        config = load_config(args.file)
    except ConfigError as exc:
        unset = {issue.unset_variable: None for issue in exc.issues if issue.unset_variable}
        if not unset or any(issue.unset_variable is None for issue in exc.issues):
            print(exc, file=sys.stderr)
            return EXIT_INVALID
        needing = [issue.loc for issue in exc.issues]
        try:
            config = load_config(
                args.file, environ={**os.environ, **dict.fromkeys(unset, UNSET_STAND_IN)})
        except ConfigError as again:
            problems = [issue for issue in again.issues
                        if not any(issue.loc[:len(loc)] == loc for loc in needing)]
            if problems:
                print(ConfigError(problems), file=sys.stderr)
                return EXIT_INVALID
            config = None
    print(f"{args.file}: OK" + (", once these environment variables are set where it runs: "
                                + ", ".join(unset) if unset else ""))
    for line in summary_lines(config) if config is not None else []:
        print(f"  {line}")
    return 0


def run_schema(args: argparse.Namespace) -> int:
    from bridge.config.editor_schema import editor_schema

    print(json.dumps(editor_schema(), indent=args.indent or None))
    return 0


def summary_lines(config: Any) -> list[str]:
    """A few lines a person can check at a glance; no token ever appears."""
    from bridge.store.opening import redacted as without_password

    lines: list[str] = []
    if config.hub is not None:
        groups = ", ".join(
            f"{group.id} ({', '.join(group.bots) or 'no bots'})" for group in config.hub.groups
        )
        lines.append(f"hub: listening on {config.hub.listen}; groups: {groups or 'none'}")
    if config.bcn.embedded:
        lines.append(f"bcn: embedded hub, link name '{config.bcn.link_name}'")
    else:
        lines.append(f"bcn: {without_password(config.bcn.url)}, link '{config.bcn.link_name}'")
    lines.append(f"store: {without_password(config.store)}")
    lines.append(f"web: {config.web.listen}" if config.web.enabled else "web: off")
    accounts = [f"{kind}:{name}" for kind, named in config.accounts.items() for name in named]
    lines.append(f"accounts: {', '.join(accounts) or 'none'}")
    lines.append(f"bindings: {len(config.bindings)}")
    for binding in config.bindings:
        thread = f" thread {binding.thread}" if binding.thread is not None else ""
        protocol = "protocol on" if binding.protocol.enabled else "protocol off"
        lines.append(f"  {binding.channel} {binding.chat}{thread} -> {binding.group} ({protocol})")
    commands = ", ".join(f"/{name}" for name in config.commands.enabled().values())
    lines.append(f"commands: {commands or 'none'}")
    return lines
