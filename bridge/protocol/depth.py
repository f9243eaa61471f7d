"""Conversation depth: the hop counter that stops bots from delegating forever.

A chain of bots may only go `max` hops deep; at the limit the only message a bot may
send is a RESPONSE. The rules live here so the parser, the builders and the relay agree
on one definition of a valid depth.
"""

from __future__ import annotations

from typing import NamedTuple

from bridge.protocol.syntax import JS_WHITESPACE

# The reference builder's default and the cap above which a chain is refused outright
# (a runaway max defeats the point of the limit).
MAX_DEPTH_CAP = 10

# Depth numbers longer than this are treated as malformed: the reference (JavaScript)
# would turn them into imprecise floats, and Python refuses to parse very long ints.
_MAX_DEPTH_DIGITS = 15


class Depth(NamedTuple):
    """`current` hops taken so far (1 for a fresh request) out of at most `max`."""

    current: int
    max: int

    def __str__(self) -> str:
        return f"{self.current}/{self.max}"


DEFAULT_DEPTH = Depth(1, 5)

# Every depth as the builders write it ("1/5", "2/5", ... "15/15"), looked up instead of
# parsed: nearly every message carries one of these, and a lookup is a fifth of the parse.
# A constant table built at import (Depth is immutable), not a cache: nothing changes later.
_WRITTEN_DEPTHS: dict[str, Depth] = {
    f"{current}/{maximum}": Depth(current, maximum)
    for current in range(16)
    for maximum in range(16)
}


def parse_depth(value: str, *, loose: bool = False) -> Depth | None:
    """Read `N/M` (ASCII digits); anything malformed or absurdly long is `None`, never an error.

    `loose` (the article dialect) also allows whitespace around the slash.
    """
    written = _WRITTEN_DEPTHS.get(value)
    if written is not None:
        return written
    current, slash, maximum = value.partition("/")
    if loose:
        current, maximum = current.rstrip(JS_WHITESPACE), maximum.lstrip(JS_WHITESPACE)
    if not (slash and value.isascii() and current.isdigit() and maximum.isdigit()):
        return None
    if len(current) > _MAX_DEPTH_DIGITS or len(maximum) > _MAX_DEPTH_DIGITS:
        current, maximum = current.lstrip("0") or "0", maximum.lstrip("0") or "0"
        if len(current) > _MAX_DEPTH_DIGITS or len(maximum) > _MAX_DEPTH_DIGITS:
            return None
    return Depth(int(current), int(maximum))


def next_depth(depth: Depth) -> Depth:
    """The depth a reply to a message at `depth` carries (one hop further)."""
    checked = coerce_depth(depth)
    return Depth(checked.current + 1, checked.max)


def coerce_depth(depth: object) -> Depth:
    """Accept a `Depth` or a plain `(current, max)` pair of ints; refuse anything else."""
    if not isinstance(depth, tuple) or len(depth) != 2:
        raise ValueError(f"depth must be a (current, max) pair of integers, got {depth!r}")
    current, maximum = depth
    for number in (current, maximum):
        if not isinstance(number, int) or isinstance(number, bool):
            raise ValueError(f"depth must be a (current, max) pair of integers, got {depth!r}")
    return Depth(current, maximum)


def check_depth(depth: Depth, message_type: str, max_depth_cap: int = MAX_DEPTH_CAP) -> None:
    """Refuse a depth that no well-behaved bot could send with a `message_type` message.

    The last check (and its wording) is the reference library's: at the limit only a
    RESPONSE (or a BROADCAST, which starts no chain) may go out.
    """
    if depth.current < 1:
        raise ValueError(f"Depth {depth} is invalid: current depth must be at least 1.")
    if depth.max > max_depth_cap:
        raise ValueError(
            f"Depth {depth} is invalid: max depth {depth.max} exceeds the cap of {max_depth_cap}."
        )
    if depth.current > depth.max:
        raise ValueError(f"Depth {depth} is invalid: current depth exceeds max depth.")
    if depth.current == depth.max and message_type in ("REQUEST", "CLARIFY", "HANDOFF"):
        raise ValueError(
            f"Depth limit reached ({depth}). Cannot send {message_type}. "
            "Must send RESPONSE instead."
        )
