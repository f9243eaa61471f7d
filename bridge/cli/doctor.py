"""`bcn-bridge doctor -c FILE`: check a deployment live, one line per check with its fix.

Exit 0 when nothing failed (warnings, marked `!`, do not fail), 1 otherwise, so a deploy
script or a CI job can run it before `bcn-bridge run`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from typing import Any

EXIT_FAILED = 1
MARKS = {"ok": "✓", "warn": "!", "fail": "✗"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "doctor", help="check config, store, BCN link and every platform account live",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("-c", "--config", required=True, metavar="FILE", help="config file")
    parser.set_defaults(handler=run_doctor_command)


def run_doctor_command(args: argparse.Namespace) -> int:
    from bridge.doctor import run_doctor
    from bridge.logs import setup_logging

    setup_logging("ERROR")  # the checks speak for themselves; libraries stay quiet
    logging.getLogger().setLevel(logging.CRITICAL)
    healthy = asyncio.run(run_doctor(args.config, show))
    return 0 if healthy else EXIT_FAILED


def show(item: Any) -> None:
    """One check as one line: mark, what, and the fix when there is one."""
    from bridge.logs import redact

    line = f"{MARKS.get(item.status, '?')} {item.what}"
    if item.fix:
        line += f" — fix: {item.fix}"
    print(redact(line), flush=True)
