"""The words of the conversation state machine: message types, statuses, default timeouts."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

# The text protocol's message types (docs/protocol.md).
REQUEST = "REQUEST"
RESPONSE = "RESPONSE"
CLARIFY = "CLARIFY"
HANDOFF = "HANDOFF"
BROADCAST = "BROADCAST"
MESSAGE_TYPES = frozenset({REQUEST, RESPONSE, CLARIFY, HANDOFF, BROADCAST})

# History entries the tracker writes itself, not caused by a protocol message.
ANSWER = "ANSWER"  # a human (or the relay) answered a CLARIFY
CLOSE = "CLOSE"  # the relay closed the conversation
TIMEOUT = "TIMEOUT"  # the sweep found the deadline passed
EXPIRED = "EXPIRED"  # the sweep found a BROADCAST past its expiry

# Who the tracker's own history entries are from.
BRIDGE = "bridge"

# Statuses. Active ones wait for something and have a deadline; finished ones do not.
OPEN = "open"
CLARIFYING = "clarifying"
DONE = "done"
PARTIAL = "partial"
FAILED = "failed"
TIMED_OUT = "timeout"
EXPIRED_STATUS = "expired"  # a BROADCAST reached its expiry: it ran its course, not a failure
ACTIVE_STATUSES = frozenset({OPEN, CLARIFYING})
RESPONSE_STATUSES = frozenset({DONE, PARTIAL, FAILED})
FINISHED_STATUSES = RESPONSE_STATUSES | {TIMED_OUT, EXPIRED_STATUS}
STATUSES = ACTIVE_STATUSES | FINISHED_STATUSES

DEFAULT_TIMEOUTS: Mapping[str, timedelta] = {
    REQUEST: timedelta(minutes=30),
    HANDOFF: timedelta(minutes=30),
    CLARIFY: timedelta(minutes=10),
    BROADCAST: timedelta(minutes=5),
}


def resolve_timeouts(overrides: Mapping[str, timedelta] | None) -> dict[str, timedelta]:
    """The defaults with `overrides` applied; an unknown type or non-positive value is refused."""
    timeouts = dict(DEFAULT_TIMEOUTS)
    for message_type, value in (overrides or {}).items():
        if message_type not in DEFAULT_TIMEOUTS:
            raise ValueError(
                f"timeout for {message_type!r}: only {', '.join(sorted(DEFAULT_TIMEOUTS))}"
                " wait for a reply"
            )
        if not isinstance(value, timedelta) or value <= timedelta(0):
            raise ValueError(f"timeout for {message_type}: expected a positive timedelta, "
                             f"got {value!r}")
        timeouts[message_type] = value
    return timeouts
