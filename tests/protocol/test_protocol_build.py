"""Builders: what they refuse beyond the reference, and that what they build reads back."""

from __future__ import annotations

import re

import pytest

from bridge.protocol import (
    DEFAULT_DEPTH,
    MAX_DEPTH_CAP,
    Depth,
    build_broadcast,
    build_clarify,
    build_handoff,
    build_request,
    build_response,
    escape_value,
    generate_request_id,
    next_depth,
    parse,
)


def test_generate_request_id_shape() -> None:
    ids = {generate_request_id("Lot-Bot 2") for _ in range(50)}
    assert all(re.fullmatch(r"lotbot2-[0-9a-z]{6}", request_id) for request_id in ids)
    assert len(ids) > 1


def test_next_depth_and_default() -> None:
    assert DEFAULT_DEPTH == Depth(1, 5)
    assert next_depth(Depth(1, 5)) == Depth(2, 5)
    assert next_depth((4, 5)) == Depth(5, 5)
    with pytest.raises(ValueError, match="pair of integers"):
        next_depth(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("depth", "message"),
    [
        (Depth(0, 5), "current depth must be at least 1"),
        (Depth(6, 5), "current depth exceeds max depth"),
        (Depth(1, 11), f"exceeds the cap of {MAX_DEPTH_CAP}"),
        ((1, True), "pair of integers"),
        ("1/5", "pair of integers"),
    ],
)
def test_invalid_depth_is_refused(depth: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_response(to="A", from_="B", request_id="r", status="done", depth=depth)  # type: ignore[arg-type]


def test_depth_cap_is_configurable() -> None:
    built = build_request(to="A", from_="B", task="t", depth=Depth(1, 20), max_depth_cap=20)
    assert "Depth: 1/20\n" in built
    with pytest.raises(ValueError, match="cap of 3"):
        build_request(to="A", from_="B", task="t", depth=Depth(1, 5), max_depth_cap=3)


def test_response_and_broadcast_allowed_at_the_limit() -> None:
    assert "Depth: 5/5" in build_response(
        to="A", from_="B", request_id="r", result="x", depth=Depth(5, 5)
    )
    assert "Depth: 5/5" in build_broadcast(from_="B", message="m", depth=Depth(5, 5))


def test_original_from_and_expires_are_placed_naturally() -> None:
    built = build_handoff(
        to="Img", from_="Helper", original_from="User123", request_id="u-1", task="t",
        depth=Depth(2, 5),
    )
    assert built.startswith("```\n[HANDOFF → @Img]\nFrom: Helper\nOriginalFrom: User123\n")
    message = parse(built)
    assert message is not None and message.original_from == "User123"
    broadcast = build_broadcast(from_="Ops", request_id="o-1", message="down", expires="04:00Z")
    assert "Message: down\nExpires: 04:00Z\nDepth: 1/5\n" in broadcast
    parsed = parse(broadcast)
    assert parsed is not None and parsed.expires == "04:00Z"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (dict(task="run ```rm```"), "must not contain ```"),
        (dict(task="summary:\nStatus: ok"), "would be read as a new field"),
        (dict(task="a\nrequest_id: 5"), "would be read as a new field"),
        (dict(task="a\rb"), "first line must not contain CR"),
        (dict(task="   "), "REQUEST requires field: task"),
        (dict(priority="urgent"), "priority must be one of"),
        (dict(context=42), "must be text"),
    ],
)
def test_unreadable_values_are_refused(arguments: dict[str, object], message: str) -> None:
    base: dict[str, object] = dict(to="Mantis", from_="Lotbot", task="t")
    with pytest.raises(ValueError, match=re.escape(message)):
        build_request(**{**base, **arguments})  # type: ignore[arg-type]


def test_status_must_be_canonical() -> None:
    with pytest.raises(ValueError, match="status must be one of"):
        build_response(to="A", from_="B", request_id="r", status="success")


def test_continuation_lines_that_are_not_keys_are_fine() -> None:
    task = "steps:\n  Status: indented\nX-Header: value\n1. Step2: colon later"
    message = parse(build_request(to="M", from_="L", request_id="r", task=task))
    assert message is not None and message.task == task


def test_escape_value_makes_any_reply_buildable() -> None:
    reply = "Here you go:\r\nStatus: green\nCode:\n```py\nprint(1)\n```\u2028done"
    safe = escape_value(reply)
    message = parse(build_response(to="A", from_="B", request_id="r", result=safe))
    assert message is not None and message.result == safe
    assert safe == "Here you go:\n Status: green\n Code:\n'''py\nprint(1)\n'''\ndone"


def test_clarify_round_trip() -> None:
    built = build_clarify(to="Lotbot", from_="Mantis", request_id="r", question="Which?\nA or B")
    message = parse(built)
    assert message is not None and message.question == "Which?\nA or B"


@pytest.mark.parametrize("request_id", ["\r", "  ", "\t\n"])
def test_a_blank_request_id_is_refused_not_rendered_unreadable(request_id: str) -> None:
    """Found by the round-trip property: `RequestId: \\r` rendered a block no parser reads."""
    with pytest.raises(ValueError, match="requestId is blank"):
        build_request(to="Bot", from_="Ada", task="t", request_id=request_id)
    with pytest.raises(ValueError, match="requestId is blank"):
        build_broadcast(from_="Ada", message="m", request_id=request_id)
    assert parse(build_request(to="Bot", from_="Ada", task="t", request_id="")).request_id
