"""`bcn-bridge conversations --store URL`: list tracked protocol conversations.

What an operator runs to see which bot requests are open, who holds them and when they time
out. It reads the same store the bridge writes (SQLite in WAL mode lets it read while the
bridge runs) and refuses to create a store that is not there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bridge.store import Conversation, StoreUnavailable, open_store, parse_store_url
from bridge.store.sqlite import IN_MEMORY
from bridge.store.sqlite.migrations import SchemaTooNew
from bridge.tracking import STATUSES, Tracker

EXIT_FAILED = 1
EXIT_USAGE = 2
HEADERS = ("REQUEST ID", "TYPE", "FROM → TO", "STATUS", "DEPTH", "AGE", "DEADLINE")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "conversations",
        help="list tracked protocol conversations",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument(
        "--store", required=True, metavar="URL", help="the bridge's store, e.g. sqlite:///data/bridge.db"
    )
    parser.add_argument(
        "--status",
        action="append",
        choices=sorted(STATUSES),
        help="only this status (repeat for several)",
    )
    parser.add_argument("--chat", help="only conversations started in this chat")
    parser.add_argument("--from", dest="from_", metavar="NAME", help="only this requester")
    parser.add_argument("--to", metavar="NAME", help="only this current owner")
    parser.add_argument("--json", action="store_true", help="print a JSON list instead")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        url = parse_store_url(args.store)
    except ValueError as exc:
        print(f"bcn-bridge conversations: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if url.scheme == "sqlite" and url.path != IN_MEMORY and not Path(url.path or "").is_file():
        print(f"bcn-bridge conversations: no store at {url.path}", file=sys.stderr)
        return EXIT_FAILED
    try:
        conversations = asyncio.run(
            _list(args.store, args.status, args.chat, args.from_, args.to)
        )
    except (sqlite3.DatabaseError, SchemaTooNew) as exc:
        print(f"bcn-bridge conversations: cannot read {url.path}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except StoreUnavailable as exc:  # its message names host:port, never a password
        print(f"bcn-bridge conversations: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print(json.dumps([conversation.to_dict() for conversation in conversations], indent=2))
    else:
        print(render_table(conversations, datetime.now(UTC)))
    return 0


async def _list(
    url: str,
    statuses: list[str] | None,
    chat: str | None,
    from_: str | None,
    to: str | None,
) -> list[Conversation]:
    async with open_store(url) as store:
        return await Tracker(store).list(status=statuses, chat=chat, from_=from_, to=to)


def render_table(conversations: Sequence[Conversation], now: datetime) -> str:
    """A plain-text table, one conversation a line; ages and deadlines relative to `now`."""
    if not conversations:
        return "no conversations"
    rows = [HEADERS, *(table_row(conversation, now) for conversation in conversations)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(HEADERS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def table_row(conversation: Conversation, now: datetime) -> tuple[str, ...]:
    depth = "-" if conversation.depth is None else "{}/{}".format(*conversation.depth)
    if conversation.deadline is None:
        deadline = "-"
    elif conversation.deadline >= now:
        deadline = f"in {short_duration(conversation.deadline - now)}"
    else:
        deadline = f"overdue {short_duration(now - conversation.deadline)}"
    return (
        conversation.request_id,
        conversation.type,
        f"{conversation.from_} → {conversation.to}",
        conversation.status,
        depth,
        short_duration(now - conversation.created_at),
        deadline,
    )


def short_duration(span: timedelta) -> str:
    """`42s`, `12m`, `3h05m`, `2d04h`: enough precision to read at a glance."""
    seconds = max(int(span.total_seconds()), 0)
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 60:
        return f"{seconds}s"
    if minutes < 60:
        return f"{minutes}m"
    if hours < 24:
        return f"{hours}h{minutes % 60:02d}m"
    return f"{days}d{hours % 24:02d}h"
