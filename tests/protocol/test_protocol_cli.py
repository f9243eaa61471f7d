"""`bcn-bridge protocol parse|build`, in-process and once as a real subprocess."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.cli import main
from bridge.protocol import parse

REQUEST = "```\n[REQUEST → @Mantis]\nFrom: Lotbot\nRequestId: r1\nTask: Check it\nDepth: 2/5\n```"


def _stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))


def test_parse_prints_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _stdin(monkeypatch, "please see\n" + REQUEST)
    assert main(["protocol", "parse"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["type"] == "REQUEST" and document["from"] == "Lotbot"
    assert document["depth"] == {"current": 2, "max": 5}


def test_parse_of_chat_says_why_and_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _stdin(monkeypatch, "just a normal chat line")
    assert main(["protocol", "parse"]) == 1
    out, err = capsys.readouterr()
    assert out.strip() == "null"
    assert "no protocol message in the text" in err and "[REQUEST → @Bot]" in err


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("```\n[REQUEST → @Mantis]\nFrom: Lotbot\nRequestId: r1\n```",
         "a REQUEST needs From, RequestId and Task"),
        ("```\n[ORDER → @Mantis]\nFrom: Lotbot\n```", "[ORDER → …] is not a message type"),
    ],
)
def test_parse_of_a_broken_block_names_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], text: str, why: str
) -> None:
    _stdin(monkeypatch, text)
    assert main(["protocol", "parse"]) == 1
    assert why in capsys.readouterr().err


def test_build_request(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([
        "protocol", "build", "request", "--to", "Mantis", "--from", "Lotbot",
        "--request-id", "lotbot-abc123", "--task", "Check it", "--depth", "2/5",
        "--priority", "high", "--original-from", "Alice",
    ])
    assert code == 0
    assert capsys.readouterr().out == (
        "```\n[REQUEST → @Mantis]\nFrom: Lotbot\nOriginalFrom: Alice\n"
        "RequestId: lotbot-abc123\nTask: Check it\nDepth: 2/5\nPriority: high\n```\n"
    )


def test_build_broadcast_and_response(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["protocol", "build", "broadcast", "--from", "Ops", "--request-id", "o-1",
                 "--message", "down at 2am"]) == 0
    assert "[BROADCAST → @all]\nFrom: Ops\nRequestId: o-1\nMessage: down at 2am\n" in (
        capsys.readouterr().out
    )
    assert main(["protocol", "build", "response", "--to", "Lotbot", "--from", "Mantis",
                 "--request-id", "r1", "--status", "done", "--depth", "5/5"]) == 0
    assert "Status: done\nDepth: 5/5\n```" in capsys.readouterr().out


def test_build_clarify_with_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["protocol", "build", "clarify", "--to", "Ada", "--from", "Rules",
                 "--request-id", "ada-1", "--question", "Which city?",
                 "--option", "Paris", "--option", "New York"]) == 0
    message = parse(capsys.readouterr().out)
    assert message is not None and message.options == ("Paris", "New York")
    assert main(["protocol", "build", "clarify", "--to", "Ada", "--from", "Rules",
                 "--request-id", "ada-1", "--question", "q", "--option", "a | b"]) == 2
    assert "must not contain |" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        (["request", "--to", "M", "--from", "L", "--task", "t", "--depth", "5/5"],
         "Depth limit reached (5/5)"),
        (["clarify", "--to", "M", "--from", "L", "--request-id", "r"],
         "CLARIFY requires field: question"),
        (["request", "--to", "M", "--from", "L", "--task", "t", "--depth", "five"],
         "--depth must look like 1/5"),
        (["handoff", "--to", "M", "--from", "L", "--request-id", "r", "--task", "t",
          "--depth", "1/8", "--max-depth-cap", "6"], "exceeds the cap of 6"),
    ],
)
def test_build_violation_exits_2(
    arguments: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["protocol", "build", *arguments]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and error in captured.err


def test_option_that_does_not_fit_the_type_is_rejected() -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["protocol", "build", "clarify", "--to", "M", "--from", "L", "--task", "t"])
    assert exit_info.value.code == 2


def test_parse_subprocess_with_invalid_utf8() -> None:
    root = Path(__file__).resolve().parents[2]
    completed = subprocess.run(
        [sys.executable, "-m", "bridge.cli", "protocol", "parse"],
        input=REQUEST.encode() + b"\n\xff\xfe trailing junk",
        capture_output=True,
        cwd=root,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["task"] == "Check it"
