"""Agreement with the reference library (L0T-B0T/bot-protocol v0.1).

`reference_cases.json` was produced by running the reference parser under node on each
input; the builder expectations below are its builder's literal output. Only data from
the reference lives here, never its code.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bridge.protocol import (
    Depth,
    build_broadcast,
    build_clarify,
    build_handoff,
    build_request,
    build_response,
    parse,
)

_CASES = json.loads((Path(__file__).parent / "reference_cases.json").read_text("utf-8"))["cases"]
_OUR_NAME = {"from": "from", "requestId": "request_id"}


def _compared_fields(text: str) -> dict[str, Any] | None:
    message = parse(text)
    if message is None:
        return None
    ours = message.to_dict()
    return {
        key: ours[_OUR_NAME.get(key, key)]
        for key in (
            "type", "to", "from", "requestId", "task", "result", "status", "question",
            "message", "context", "depth", "callback", "priority",
        )
    }


@pytest.mark.parametrize("case", _CASES, ids=[case["name"] for case in _CASES])
def test_parse_agrees_with_reference(case: dict[str, Any]) -> None:
    # Every stored case is one the agreement rule covers: the reference returned a
    # message, or rejected it for a missing required field or an unknown type.
    assert case["reference"] is not None or case["reference_null_reason"] in ("fields", "type")
    assert _compared_fields(case["text"]) == case["reference"]


def test_fixture_covers_both_outcomes() -> None:
    messages = [case for case in _CASES if case["reference"] is not None]
    rejections = [case for case in _CASES if case["reference"] is None]
    assert len(messages) >= 50 and len(rejections) >= 30


BUILT = [
    (
        build_request,
        dict(
            to="Mantis", from_="Lotbot", request_id="lotbot-abc123",
            task="Check Mac Mini CLI version", context="Weekly audit", depth=Depth(1, 5),
            callback="@Lotbot", priority="normal",
        ),
        "```\n[REQUEST → @Mantis]\nFrom: Lotbot\nRequestId: lotbot-abc123\n"
        "Task: Check Mac Mini CLI version\nContext: Weekly audit\nDepth: 1/5\n"
        "Callback: @Lotbot\nPriority: normal\n```",
    ),
    (
        build_request,
        dict(
            to="Mantis", from_="Lotbot", request_id="lotbot-abc123",
            task="Do these things:\n1. Check version\n2. Report status",
        ),
        "```\n[REQUEST → @Mantis]\nFrom: Lotbot\nRequestId: lotbot-abc123\n"
        "Task: Do these things:\n1. Check version\n2. Report status\nDepth: 1/5\n```",
    ),
    (
        build_response,
        dict(
            to="Lotbot", from_="Mantis", request_id="lotbot-abc123", status="done",
            result="CLI is up to date", context="ok", depth=(2, 5),
        ),
        "```\n[RESPONSE → @Lotbot]\nFrom: Mantis\nRequestId: lotbot-abc123\nStatus: done\n"
        "Result: CLI is up to date\nContext: ok\nDepth: 2/5\n```",
    ),
    (
        build_response,
        dict(
            to="Lotbot", from_="Mantis", request_id="lotbot-abc123",
            result="partial answer", depth=Depth(5, 5),
        ),
        "```\n[RESPONSE → @Lotbot]\nFrom: Mantis\nRequestId: lotbot-abc123\n"
        "Result: partial answer\nDepth: 5/5\n```",
    ),
    (
        build_clarify,
        dict(
            to="Lotbot", from_="Mantis", request_id="lotbot-abc123",
            question="Which version?", depth=Depth(2, 5),
        ),
        "```\n[CLARIFY → @Lotbot]\nFrom: Mantis\nRequestId: lotbot-abc123\n"
        "Question: Which version?\nDepth: 2/5\n```",
    ),
    (
        build_handoff,
        dict(
            to="Clawcos", from_="Lotbot", request_id="lotbot-abc123", task="Check Mac Mini",
            context="System audit", depth=Depth(2, 5), callback="@Lotbot", priority="high",
        ),
        "```\n[HANDOFF → @Clawcos]\nFrom: Lotbot\nRequestId: lotbot-abc123\n"
        "Task: Check Mac Mini\nContext: System audit\nDepth: 2/5\nCallback: @Lotbot\n"
        "Priority: high\n```",
    ),
    (
        build_broadcast,
        dict(
            from_="Lotbot", request_id="lotbot-bcast-001", message="Going offline",
            context="maintenance", depth=Depth(1, 5),
        ),
        "```\n[BROADCAST → @all]\nFrom: Lotbot\nRequestId: lotbot-bcast-001\n"
        "Message: Going offline\nContext: maintenance\nDepth: 1/5\n```",
    ),
]


@pytest.mark.parametrize(("builder", "arguments", "expected"), BUILT)
def test_builders_are_byte_identical_to_reference(
    builder: Any, arguments: dict[str, Any], expected: str
) -> None:
    assert builder(**arguments) == expected


REFUSED = [
    (build_request, dict(to="Mantis", from_="Lotbot"), "REQUEST requires field: task"),
    (build_request, dict(from_="Lotbot", task="t"), "REQUEST requires field: to"),
    (build_response, dict(to="Lotbot", from_="Mantis"), "RESPONSE requires field: requestId"),
    (
        build_response,
        dict(to="Lotbot", from_="Mantis", request_id="r"),
        "RESPONSE requires either status or result",
    ),
    (
        build_clarify,
        dict(to="Lotbot", from_="Mantis", request_id="r"),
        "CLARIFY requires field: question",
    ),
    (
        build_handoff,
        dict(to="Lotbot", from_="Mantis", task="t"),
        "HANDOFF requires field: requestId",
    ),
    (build_broadcast, dict(from_="Lotbot"), "BROADCAST requires field: message"),
    (
        build_request,
        dict(to="M", from_="Lotbot", task="t", depth=Depth(5, 5)),
        "Depth limit reached (5/5). Cannot send REQUEST. Must send RESPONSE instead.",
    ),
    (
        build_clarify,
        dict(to="M", from_="Lotbot", request_id="r", question="q", depth=Depth(3, 3)),
        "Depth limit reached (3/3). Cannot send CLARIFY. Must send RESPONSE instead.",
    ),
    (
        build_handoff,
        dict(to="M", from_="Lotbot", request_id="r", task="t", depth=Depth(5, 5)),
        "Depth limit reached (5/5). Cannot send HANDOFF. Must send RESPONSE instead.",
    ),
]


@pytest.mark.parametrize(("builder", "arguments", "message"), REFUSED)
def test_builder_errors_use_reference_wording(
    builder: Any, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        builder(**arguments)


def test_generated_request_id_and_default_depth_match_reference_shape() -> None:
    built = build_request(to="Mantis", from_="Lot Bot!", task="x")
    assert re.fullmatch(
        r"```\n\[REQUEST → @Mantis\]\nFrom: Lot Bot!\nRequestId: lotbot-[0-9a-z]{6}\n"
        r"Task: x\nDepth: 1/5\n```",
        built,
    )
