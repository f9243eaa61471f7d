"""Parsing: both dialects, blocks inside chat messages, and what is deliberately lenient."""

from __future__ import annotations

import pytest

from bridge.protocol import Depth, MessageType, ProtocolMessage, find_block, parse

FENCE = "```"


def fenced(body: str, opening: str = FENCE + "\n") -> str:
    return f"{opening}{body}\n{FENCE}"


SKILL_REQUEST = fenced(
    "[REQUEST → @Mantis]\nFrom: Lotbot\nRequestId: lotbot-abc123\nTask: Check the CLI\n"
    "Context: Weekly audit\nDepth: 1/5\nPriority: normal"
)


def test_skill_request_fields() -> None:
    message = parse(SKILL_REQUEST)
    assert message is not None
    assert message.type is MessageType.REQUEST and message.type == "REQUEST"
    assert (message.to, message.from_, message.request_id) == ("Mantis", "Lotbot", "lotbot-abc123")
    assert (message.task, message.context, message.priority) == (
        "Check the CLI", "Weekly audit", "normal"
    )
    assert message.depth == Depth(1, 5)
    assert message.raw == SKILL_REQUEST
    assert message.meta == {}


def test_to_dict_is_json_shaped() -> None:
    message = parse(SKILL_REQUEST)
    assert message is not None
    assert message.to_dict() == {
        "type": "REQUEST", "to": "Mantis", "from": "Lotbot", "request_id": "lotbot-abc123",
        "task": "Check the CLI", "result": None, "status": None, "question": None,
        "message": None, "context": "Weekly audit", "depth": {"current": 1, "max": 5},
        "callback": None, "priority": "normal", "original_from": None, "expires": None,
        "meta": {},
    }


@pytest.mark.parametrize("spelling", ["Request-Id", "request_id", "REQUEST_ID", "request-id"])
def test_request_id_spellings(spelling: str) -> None:
    message = parse(fenced(f"[REQUEST → @Mantis]\nFrom: Lotbot\n{spelling}: r-9\nTask: t"))
    assert message is not None and message.request_id == "r-9"


def test_unknown_hyphenated_word_stays_in_value() -> None:
    message = parse(
        fenced("[REQUEST → @Mantis]\nFrom: Lotbot\nRequestId: r\nTask: fix\nX-Trace: 42")
    )
    assert message is not None
    assert message.task == "fix\nX-Trace: 42"


def test_meta_keeps_original_spelling() -> None:
    message = parse(
        fenced("[REQUEST → @Mantis]\nFrom: Lotbot\nRequestId: r\nTask: t\nDeadLine: friday")
    )
    assert message is not None and message.meta == {"DeadLine": "friday"}


def test_block_inside_chat_message_with_language_tag() -> None:
    text = (
        "Hey @Mantis, could you take this one?\n"
        "```text\n[REQUEST → @Mantis]\nFrom: Lotbot\nRequestId: r1\nTask: Rotate the logs\n```"
        "\nThanks a lot, I'll be around."
    )
    message = parse(text)
    assert message is not None and message.task == "Rotate the logs"
    span = find_block(text)
    assert span is not None
    block = text[span[0] : span[1]]
    assert block.startswith("```text\n[REQUEST") and block.endswith("Rotate the logs\n```")


def test_earlier_non_protocol_code_block_is_skipped() -> None:
    text = (
        "Here is the script:\n```python\nprint('hi')\n```\nand the request:\n"
        + fenced("[CLARIFY → @Lotbot]\nFrom: Mantis\nRequestId: r1\nQuestion: Which host?")
    )
    message = parse(text)
    assert message is not None and message.question == "Which host?"


def test_first_protocol_block_decides_even_if_invalid() -> None:
    text = fenced("[REQUEST → @Mantis]\nFrom: Lotbot\nTask: no id") + "\n" + SKILL_REQUEST
    assert parse(text) is None


# --- article dialect ----------------------------------------------------------------


def test_article_request_without_fence_or_at() -> None:
    text = (
        "[REQUEST → Mantis]\nFrom: LotBot\nRequestId: lotbot-weekly-patch-check-20231027\n"
        "Task: 检查所有生产服务器上Ubuntu系统的可用安全更新数量\nContext: 每周安全审计例行任务。\n"
        "Depth: 1/5\nPriority: normal"
    )
    message = parse(text)
    assert message is not None
    assert (message.type, message.to, message.from_) == ("REQUEST", "Mantis", "LotBot")
    assert message.task == "检查所有生产服务器上Ubuntu系统的可用安全更新数量"
    assert message.depth == Depth(1, 5) and message.priority == "normal"


def test_article_response_body_and_success_status() -> None:
    text = (
        "[RESPONSE -> LotBot]\nFrom: Mantis\nRequestId: lotbot-weekly-patch-check-20231027\n"
        "Status: success\nBody: {server1: 5, server2: 0, server3: 12}\nDepth: 1/5"
    )
    message = parse(text)
    assert message is not None
    assert message.status == "done"
    assert message.result == "{server1: 5, server2: 0, server3: 12}"


def test_article_partial_success() -> None:
    text = "[RESPONSE → LotBot]\nFrom: Mantis\nRequestId: r\nStatus: partial_success"
    message = parse(text)
    assert message is not None and message.status == "partial"


def test_article_handoff_original_from() -> None:
    text = (
        "[HANDOFF → ImageOptimizerBot]\nFrom: GeneralHelperBot\nOriginalFrom: User123\n"
        "RequestId: user123-image-opt-aaa111\nTask: 压缩图片\nDepth: 2/5"
    )
    message = parse(text)
    assert message is not None
    assert (message.original_from, message.request_id) == ("User123", "user123-image-opt-aaa111")


@pytest.mark.parametrize("target", ["*all*", "all", "broadcast", "@broadcast"])
def test_article_broadcast_targets_and_announcement(target: str) -> None:
    text = (
        f"[BROADCAST → {target}]\nFrom: SysMaintenanceBot\n"
        "Announcement: 主数据库将于北京时间今晚02:00-04:00进行维护\n"
        "Expires: 2023-10-28T04:00:00Z\nDepth: 1/5"
    )
    message = parse(text)
    assert message is not None
    assert message.to == "all"
    assert message.message == "主数据库将于北京时间今晚02:00-04:00进行维护"
    assert message.expires == "2023-10-28T04:00:00Z"
    assert message.request_id is None  # the article's BROADCAST has no RequestId


def test_skill_form_keeps_reference_semantics_for_article_names() -> None:
    # In a skill-form block the reference reads Body as an unknown field and `success` as
    # an invalid status; so do we (the agreement rule), keeping Body in meta.
    text = fenced(
        "[RESPONSE → @Lotbot]\nFrom: Mantis\nRequestId: r\nStatus: success\nResult: ok\nBody: b"
    )
    message = parse(text)
    assert message is not None
    assert (message.status, message.result, message.meta) == (None, "ok", {"Body": "b"})


def test_skill_form_at_target_is_literal() -> None:
    message = parse(fenced("[BROADCAST → @*all*]\nFrom: X\nRequestId: r\nMessage: m"))
    assert message is not None and message.to == "*all*"


def test_crlf_block_reads_as_lf() -> None:
    text = (
        "```\r\n[REQUEST → @Mantis]\r\nFrom: Lotbot\r\nRequestId: r1\r\nTask: one\r\ntwo\r\n"
        "Depth: 2/5\r\n```"
    )
    message = parse(text)
    assert message is not None
    assert (message.from_, message.task, message.depth) == ("Lotbot", "one\ntwo", Depth(2, 5))


def test_unfenced_block_ends_at_blank_line() -> None:
    text = "Please:\n[REQUEST -> Mantis]\nFrom: Lotbot\nRequestId: r\nTask: t\n\nthanks!"
    message = parse(text)
    assert message is not None and message.task == "t"
    assert find_block(text) == (len("Please:\n"), text.index("\n\nthanks"))


def test_unclosed_fence_runs_to_end() -> None:
    message = parse("```\n[REQUEST → @Mantis]\nFrom: Lotbot\nRequestId: r\nTask: cut off")
    assert message is not None and message.task == "cut off"


def test_article_depth_allows_spaces_and_status_case() -> None:
    message = parse("[RESPONSE → X]\nFrom: Y\nRequestId: r\nStatus: Done\nDepth: 2 / 5")
    assert message is not None and (message.status, message.depth) == ("done", Depth(2, 5))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "just chatting about [things] -> elsewhere",
        "[REQUEST → Mantis] but not a header line",
        "```\nprint('no protocol here')\n```",
        "[NOTE → Mantis]\nFrom: a\nRequestId: r\nTask: t",
        "[request → Mantis]\nFrom: a\nRequestId: r\nTask: t",
    ],
)
def test_not_protocol(text: str) -> None:
    assert parse(text) is None


@pytest.mark.parametrize("value", [None, 42, b"```\n[REQUEST \xe2\x86\x92 @M]\n```", ["x"]])
def test_non_text_is_none(value: object) -> None:
    assert parse(value) is None
    assert find_block(value) is None  # type: ignore[arg-type]


def test_find_block_none_without_header() -> None:
    assert find_block("hello ``` world ```") is None


def test_depth_that_python_cannot_hold_is_none() -> None:
    digits = "9" * 5000
    message = parse(fenced(f"[REQUEST → @M]\nFrom: a\nRequestId: r\nTask: t\nDepth: {digits}/5"))
    assert message is not None and message.depth is None


def test_parsed_message_equals_constructed_and_is_frozen() -> None:
    import dataclasses

    message = parse(SKILL_REQUEST)
    assert message is not None
    constructed = ProtocolMessage(
        type=MessageType.REQUEST, to="Mantis", from_="Lotbot", request_id="lotbot-abc123",
        task="Check the CLI", context="Weekly audit", depth=Depth(1, 5), priority="normal",
        raw=SKILL_REQUEST,
    )
    assert message == constructed
    assert dataclasses.replace(message, task="other").task == "other"
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.task = "changed"  # type: ignore[misc]


# --- the fast paths keep every rule (the header matched in place, the two key patterns,
# --- the table of written depths)


@pytest.mark.parametrize(
    ("after_header", "skill_form"),
    [("\n", True), ("  \n", False), ("\u2028\n", False), ("\r\n", False)],
)
def test_skill_form_needs_the_header_alone_on_its_line(after_header: str, skill_form: bool) -> None:
    # Trailing blanks after `]` make it an article-dialect block (as when the first line is
    # split off and matched whole), where Body means Result; in the skill form it is meta.
    text = f"```\n[RESPONSE → @Lot]{after_header}From: M\nRequestId: r\nBody: b\nStatus: done\n```"
    message = parse(text)
    assert message is not None
    assert (message.result, message.meta) == ((None, {"Body": "b"}) if skill_form else ("b", {}))


def test_skill_header_alone_with_blanks_up_to_the_fence() -> None:
    assert find_block("```\n [REQUEST → @M] \n\t```") == (0, len("```\n [REQUEST → @M] \n\t```"))
    assert parse("```[REQUEST → @M]```") is None  # a header, but no fields


@pytest.mark.parametrize("separator", ["\r", "\u2028", "\u2029"])
def test_a_line_break_inside_a_key_line_makes_it_a_continuation(separator: str) -> None:
    # JavaScript's `.` stops there, so the reference reads the line as part of Task; the
    # other key lines of the same body are still keys.
    text = fenced(f"[REQUEST → @M]\nFrom: a\nRequestId: r\nTask: t\nContext: x{separator}y")
    message = parse(text)
    assert message is not None
    assert (message.task, message.context) == (f"t\nContext: x{separator}y", None)
    # Only the value part counts: blanks right after the colon may hold one.
    message = parse(fenced(f"[REQUEST → @M]\nFrom: a\nRequestId: r\nTask:{separator} t"))
    assert message is not None and message.task == "t"


def test_trailing_line_breaks_do_not_hide_the_last_key() -> None:
    message = parse(fenced("[REQUEST → @M]\nFrom: a\nRequestId: r\nTask: t\u2028\r \n"))
    assert message is not None and message.task == "t"


@pytest.mark.parametrize(
    ("written", "depth"),
    [("1/5", Depth(1, 5)), ("15/15", Depth(15, 15)), ("16/20", Depth(16, 20)),
     ("01/5", Depth(1, 5)), ("0/0", Depth(0, 0)), ("1/5 ", Depth(1, 5)), ("1 /5", None),
     ("1/5/", None), ("-1/5", None), ("١/5", None)],
)  # fmt: skip
def test_depths_as_written_and_otherwise(written: str, depth: Depth | None) -> None:
    message = parse(fenced(f"[REQUEST → @M]\nFrom: a\nRequestId: r\nTask: t\nDepth: {written}"))
    assert message is not None and message.depth == depth
