"""Property tests: parse never raises on any string, and builders round-trip.

The hostile inputs are shaped to make a backtracking regex blow up (unclosed fences,
walls of `[` or `:`, huge single lines, 100k lines). The test only runs them: a
quadratic path would show up as a suite that never finishes, not as a timing assertion.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.protocol import (
    Depth,
    MessageType,
    ProtocolMessage,
    build_broadcast,
    build_clarify,
    build_handoff,
    build_request,
    build_response,
    escape_value,
    find_block,
    parse,
)
from bridge.protocol.syntax import JS_WHITESPACE

MEGABYTE = 1 << 20
HEADER = "[REQUEST → @Mantis]"

HOSTILE = {
    "unclosed fences": "```a" * (MEGABYTE // 4),
    "fences with newline only": "```\n" * (MEGABYTE // 4),
    "bracketed fences": "```[\n" * (MEGABYTE // 5),
    "brackets": "[" * 100_000,
    "colons": ":" * 100_000,
    "colon lines": "```\n" + HEADER + "\n" + "a:\n" * 100_000 + "```",
    "one megabyte line": "```\n" + HEADER + "\nFrom: " + "x" * MEGABYTE + "\n```",
    "megabyte target": "```\n[REQUEST → @" + "]" * MEGABYTE + "\n```",
    "hundred thousand lines": "```\n" + HEADER + "\nFrom: a\nRequestId: r\nTask: t\n"
    + "line\n" * 100_000 + "```",
    "key letters without colon": "```\n" + HEADER + "\n" + "A" * MEGABYTE + "\n```",
    "whitespace then CR": "```\n" + HEADER + "\nTask:" + " " * MEGABYTE + "x\r\n```",
    "headers on one line": "[REQUEST -> " * 100_000,
    "unfenced headers": ("[REQUEST -> @x]\n" + "From:\n") * 50_000,
    "many protocol blocks": ("```\n" + HEADER + "\n```\n") * 30_000,
    "header without closing bracket": "```\n[REQUEST → @" + "a" * MEGABYTE,
    "arrows": "[REQUEST" + " ->" * 300_000,
    "separators": "```\n" + HEADER + "\n" + "Task:\u2028\r" * 100_000 + "```",
    "depth digits": "```\n" + HEADER + "\nFrom: a\nRequestId: r\nTask: t\nDepth: "
    + "9" * MEGABYTE + "/5\n```",
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_input_is_handled(text: str) -> None:
    message = parse(text)
    assert message is None or isinstance(message, ProtocolMessage)
    span = find_block(text)
    assert span is None or 0 <= span[0] < span[1] <= len(text)


PROTOCOL_TOKENS = st.sampled_from(
    [
        "```", "```text", "\n", "\r\n", "\r", "\u2028", "\ufeff", "\xa0", " ", "[", "]", "→",
        "->", "@", ":", "*all*", "REQUEST", "RESPONSE", "CLARIFY", "HANDOFF", "BROADCAST",
        "From: a", "RequestId: r", "Request-Id: r", "Task: t", "Status: done", "Result: x",
        "Question: q", "Message: m", "Body: b", "Announcement: a", "Depth: 1/5", "Depth: ",
        "Priority: high", "1/5", "名", "😀", "\x00", "-", "_",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(), st.lists(PROTOCOL_TOKENS, max_size=60).map("".join)))
def test_parse_never_raises(text: str) -> None:
    message = parse(text)
    if message is not None:
        assert message.type in MessageType.__members__.values()
        assert message.from_ and message.to
        assert message.raw is text
        span = find_block(text)
        assert span is not None and 0 <= span[0] < span[1] <= len(text)


# --- builders round-trip ---------------------------------------------------------------

names = st.text(
    st.characters(blacklist_characters=JS_WHITESPACE + "`", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=20,
)
values = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80)
optional_values = st.none() | values
depths = st.builds(
    lambda current, extra: Depth(current, current + extra),
    st.integers(1, 9),
    st.integers(0, 9),
).filter(lambda depth: depth.max <= 10)


def _expected(value: str | None) -> str | None:
    return value.strip(JS_WHITESPACE) if value else None


def _check_round_trip(builder: Any, arguments: dict[str, Any], expected_type: str) -> None:
    try:
        built = builder(**arguments)
    except ValueError:
        return  # refusing is allowed; building something unreadable is not
    message = parse(built)
    assert message is not None, built
    assert message.type == expected_type
    for name, value in arguments.items():
        if name == "depth":
            assert message.depth == value
        elif name == "to":
            assert message.to == value
        elif name == "request_id" and not value:
            assert message.request_id  # generated
        else:
            assert getattr(message, name) == _expected(value), name


@settings(max_examples=150, deadline=None)
@given(
    to=names, from_=values, request_id=optional_values, task=values, context=optional_values,
    depth=depths, callback=optional_values,
    priority=st.none() | st.sampled_from(["low", "normal", "high"]),
    original_from=optional_values,
)
def test_request_round_trip(**arguments: Any) -> None:
    _check_round_trip(build_request, arguments, "REQUEST")


@settings(max_examples=100, deadline=None)
@given(
    to=names, from_=values, request_id=values, task=values, context=optional_values,
    depth=depths, callback=optional_values, original_from=optional_values,
)
def test_handoff_round_trip(**arguments: Any) -> None:
    _check_round_trip(build_handoff, arguments, "HANDOFF")


@settings(max_examples=100, deadline=None)
@given(
    to=names, from_=values, request_id=values,
    status=st.none() | st.sampled_from(["done", "partial", "failed"]),
    result=optional_values, context=optional_values, depth=depths,
)
def test_response_round_trip(**arguments: Any) -> None:
    _check_round_trip(build_response, arguments, "RESPONSE")


@settings(max_examples=100, deadline=None)
@given(to=names, from_=values, request_id=values, question=values, depth=depths)
def test_clarify_round_trip(**arguments: Any) -> None:
    _check_round_trip(build_clarify, arguments, "CLARIFY")


@settings(max_examples=100, deadline=None)
@given(
    from_=values, message=values, request_id=optional_values, context=optional_values,
    depth=depths, expires=optional_values,
)
def test_broadcast_round_trip(**arguments: Any) -> None:
    _check_round_trip(build_broadcast, arguments, "BROADCAST")


@settings(max_examples=200, deadline=None)
@given(reply=values)
def test_escaped_text_always_builds_and_round_trips(reply: str) -> None:
    safe = escape_value(reply)
    if not safe.strip(JS_WHITESPACE):
        return
    built = build_response(to="Asker", from_="Bot", request_id="r-1", result=safe)
    message = parse(built)
    assert message is not None and message.result == safe.strip(JS_WHITESPACE)


def test_round_trip_builds_mostly_succeed() -> None:
    # Guard against the property tests passing vacuously because every build is refused.
    built = build_request(
        to="Mantis", from_="Lot bot", task="multi\nline\n  Key: indented", context=" padded "
    )
    message = parse(built)
    assert message is not None
    assert (message.task, message.context) == ("multi\nline\n  Key: indented", "padded")
