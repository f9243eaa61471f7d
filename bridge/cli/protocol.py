"""`bcn-bridge protocol`: parse protocol text from stdin, or build a canonical message.

Handy for scripting bots that only speak the text protocol, and for checking by hand
what the bridge will make of a chat message.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from bridge.protocol import (
    MAX_DEPTH_CAP,
    Depth,
    build_broadcast,
    build_clarify,
    build_handoff,
    build_request,
    build_response,
    parse,
)
from bridge.protocol.depth import parse_depth
from bridge.protocol.locate import locate_block

# Each message type: its builder and the options (besides --depth) that make sense for it.
_BUILDS: dict[str, tuple[Callable[..., str], tuple[str, ...]]] = {
    "request": (
        build_request,
        ("to", "from", "request-id", "task", "context", "callback", "priority", "original-from"),
    ),
    "response": (
        build_response,
        ("to", "from", "request-id", "status", "result", "context", "original-from"),
    ),
    "clarify": (build_clarify, ("to", "from", "request-id", "question")),
    "handoff": (
        build_handoff,
        ("to", "from", "request-id", "task", "context", "callback", "priority", "original-from"),
    ),
    "broadcast": (build_broadcast, ("from", "request-id", "message", "context", "expires")),
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "protocol", help="parse or build bot-to-bot protocol messages"
    )
    actions = parser.add_subparsers(dest="protocol_action", metavar="ACTION", required=True)

    parse_parser = actions.add_parser(
        "parse", help="read text on stdin, print the message as JSON (null and exit 1 "
        "when there is none)"
    )
    parse_parser.set_defaults(handler=_parse_command)

    build_parser = actions.add_parser("build", help="print a canonical protocol message")
    kinds = build_parser.add_subparsers(dest="message_type", metavar="TYPE", required=True)
    for kind, (_, options) in _BUILDS.items():
        kind_parser = kinds.add_parser(kind, help=f"build a {kind.upper()} message")
        for option in options:
            kind_parser.add_argument(f"--{option}", dest=option.replace("-", "_"), metavar="TEXT")
        if kind == "clarify":
            kind_parser.add_argument(
                "--option", dest="options", action="append", metavar="TEXT",
                help="a choice to offer (repeat for each, at most 10): shown as a button",
            )
        kind_parser.add_argument("--depth", metavar="N/M", help="current/max depth (default 1/5)")
        kind_parser.add_argument(
            "--max-depth-cap",
            type=int,
            default=MAX_DEPTH_CAP,
            metavar="N",
            help=f"refuse a max depth above N (default {MAX_DEPTH_CAP})",
        )
        kind_parser.set_defaults(handler=_build_command)


def _parse_command(args: argparse.Namespace) -> int:
    """The message as JSON; for text that holds none, `null`, the reason on stderr, exit 1."""
    text = _read_stdin()
    message = parse(text)
    document = None if message is None else message.to_dict()
    print(json.dumps(document, ensure_ascii=False))
    if message is None:
        print(f"bcn-bridge protocol parse: {why_not_protocol(text)}", file=sys.stderr)
        return 1
    return 0


_NEEDS = {
    "REQUEST": "From, RequestId and Task",
    "HANDOFF": "From, RequestId and Task",
    "RESPONSE": "From, RequestId and Result or Status",
    "CLARIFY": "From, RequestId and Question",
    "BROADCAST": "From and Message",
}


def why_not_protocol(text: str) -> str:
    """Why `parse` found no message in `text`, in a sentence a script author can act on."""
    block = locate_block(text)
    if block is None:
        return ("no protocol message in the text: one starts with a header line such as "
                "[REQUEST → @Bot], usually inside a ``` fence")
    kind = block.type_name
    if kind not in _NEEDS:
        return f"[{kind} → …] is not a message type; the types are {', '.join(_NEEDS)}"
    return (f"the [{kind} → @{block.target}] block is incomplete or has an invalid value: "
            f"a {kind} needs {_NEEDS[kind]}")


def _build_command(args: argparse.Namespace) -> int:
    builder, options = _BUILDS[args.message_type]
    arguments: dict[str, Any] = {"max_depth_cap": args.max_depth_cap}
    for option in options:
        value = getattr(args, option.replace("-", "_"))
        if value is not None:
            arguments["from_" if option == "from" else option.replace("-", "_")] = value
    if getattr(args, "options", None):
        arguments["options"] = args.options
    try:
        if args.depth is not None:
            arguments["depth"] = _depth_option(args.depth)
        print(builder(**arguments))
    except ValueError as error:
        print(f"bcn-bridge protocol build: {error}", file=sys.stderr)
        return 2
    return 0


def _depth_option(text: str) -> Depth:
    depth = parse_depth(text.strip())
    if depth is None:
        raise ValueError(f"--depth must look like 1/5, got {text!r}")
    return depth


def _read_stdin() -> str:
    """Stdin as text; bytes that are not UTF-8 are replaced rather than crashing."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:
        return sys.stdin.read()
    return buffer.read().decode("utf-8", errors="replace")
