"""The relay's pure decisions, without sockets: commands, loop guard, protocol middleware."""

from __future__ import annotations

import pytest

from bridge.core.commands import split_command
from bridge.core.outbox import Lane
from bridge.core.protocol_flow import (
    PendingRequest,
    depth_violation,
    natural_text,
    refusal,
    reply_as_response,
)
from bridge.protocol import Depth, build_handoff, build_request, parse


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/ask Rules what is 2+2", ("ask", "Rules what is 2+2")),
        ("  /STOP  ", ("stop", "")),
        ("/ask@BridgeBot Rules now", ("ask", "Rules now")),
        ("/new\nsecond line", ("new", "second line")),
        ("/etc/hosts is a file", None),
        ("not /a command", None),
        ("/", None),
        ("/123", None),
    ],
)
def test_split_command(text: str, expected: tuple[str, str] | None) -> None:
    assert split_command(text) == expected


def test_lane_key_round_trips() -> None:
    for lane in (Lane("telegram:main", "-100", "7"), Lane("webchat:main", "lobby")):
        assert Lane.from_key(lane.key) == lane


def test_depth_violations() -> None:
    request = parse(build_request(to="B", from_="A", task="t", request_id="a-1", depth=(4, 5)))
    assert depth_violation(request) is None
    at_limit = parse(request.raw.replace("4/5", "5/5"))
    assert depth_violation(at_limit) == (
        "Depth limit reached (5/5). Cannot send REQUEST. Must send RESPONSE instead."
    )
    past = parse(request.raw.replace("4/5", "7/5"))
    assert "current depth exceeds max depth" in depth_violation(past)
    huge = parse(request.raw.replace("4/5", "1/50"))
    assert "exceeds the cap of 10" in depth_violation(huge)


def test_refusal_is_a_failed_response_to_the_sender() -> None:
    at_limit = parse(build_request(to="B", from_="A", task="t", request_id="a-1",
                                   depth=(4, 5)).replace("4/5", "5/5"))
    answer = parse(refusal(at_limit, "no further", "bcn-bridge"))
    assert (answer.type, answer.to, answer.from_, answer.request_id, answer.status) == (
        "RESPONSE", "A", "bcn-bridge", "a-1", "failed")
    assert answer.depth == Depth(5, 5)


def test_natural_text_reads_as_plain_language() -> None:
    handoff = parse(build_handoff(to="Mantis", from_="Lotbot", request_id="lotbot-1",
                                  task="check disks", context="weekly", depth=(2, 5)))
    text = natural_text(handoff)
    assert text.startswith("Lotbot hands this task over to you: check disks")
    assert "Context: weekly" in text and "(request lotbot-1, depth 2/5)" in text


def test_plain_reply_becomes_the_requests_response_even_with_awkward_text() -> None:
    pending = PendingRequest("a-1", requester="Ada", bot="Rules", depth=Depth(1, 5))
    awkward = "Result: 4\n```\ncode\n```\nStatus: surely"
    response = parse(reply_as_response(pending, awkward))
    assert (response.type, response.to, response.from_, response.status) == (
        "RESPONSE", "Ada", "Rules", "done")
    assert response.depth == Depth(2, 5)
    assert "code" in response.result
    assert PendingRequest.from_record(pending.to_record()) == pending
