"""The rules bot's pure logic: arithmetic, skills and the protocol brain, without sockets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.bcn.examples.arithmetic import CannotCompute, evaluate, find_expression, format_number
from bridge.bcn.examples.rules import RulesBrain, reply_depth
from bridge.bcn.examples.skills import Answer, NeedsDetail, complete_detail, interpret
from bridge.protocol import Depth, MessageType, build_request, build_response, parse

NOW = datetime(2026, 3, 1, 12, 30, 5, 999, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expression", "value"),
    [
        ("compute 2 + 3 * 4", "2 + 3 * 4", "14"),
        ("what is 17*3?", "17*3", "51"),
        ("(1 + 2) * -3", "(1 + 2) * -3", "-9"),
        ("0.1 + 0.2", "0.1 + 0.2", "0.3"),
        ("7 / 2", "7 / 2", "3.5"),
        ("1/3", "1/3", "0.3333333333"),
        ("2^10", "2^10", "1024"),
        ("3 times 4", "3 * 4", "12"),
        ("10 divided by 4", "10 / 4", "2.5"),
        ("17 % 5", "17 % 5", "2"),
        ("7 // 2", "7 // 2", "3"),
        ("6 × 7", "6 × 7", "42"),
        ("compute 2+3; request lotbot-abc123, depth 1/5", "2+3", "5"),
    ],
)
def test_arithmetic_is_found_and_computed_exactly(text, expression, value):
    assert find_expression(text) == expression
    assert format_number(evaluate(expression)) == value


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("1/0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("9**9**9", "exponents above"),
        ("2 ** 0.5", "whole-number exponents"),
        ("__import__('os')", "on numbers can be computed"),
        ("(1).__class__", "on numbers can be computed"),
        ("abs(-1)", "on numbers can be computed"),
        ("[1, 2]", "on numbers can be computed"),
        ("2 +", "not an arithmetic expression"),
        ("True + 1", "only numbers"),
        ("1e999", "too large"),
        ("10**60 * 10**60", "more than 60 digits"),
        ("1+" * 150 + "1", "longer than"),
        ("", "nothing to compute"),
    ],
)
def test_arithmetic_refuses_what_it_will_not_compute(expression, reason):
    with pytest.raises(CannotCompute, match=reason):
        evaluate(expression)


@given(st.text(max_size=300))
def test_arithmetic_never_crashes_on_any_text(text):
    expression = find_expression(text)
    if expression is not None:
        try:
            assert isinstance(evaluate(expression), Fraction)
        except CannotCompute:
            pass


@pytest.mark.parametrize(
    ("task", "outcome"),
    [
        ("compute 2 + 3 * 4", Answer("done", "2 + 3 * 4 = 14")),
        ("Task: what is 17*3", Answer("done", "17*3 = 51")),
        ("time", Answer("done", "2026-03-01T12:30:05Z")),
        ("what time is it?", Answer("done", "2026-03-01T12:30:05Z")),
        ("weather in Paris", Answer("done", "Weather in Paris: 18°C, partly cloudy")),
        ("What's the weather like in new york today?",
         Answer("done", "Weather in New York: 22°C, sunny")),
        ("weather for Atlantis", Answer("failed", "no weather data for Atlantis; I know Paris, "
                                                  "London, New York, Tokyo, Berlin, Sydney")),
        ("compute 1/0", Answer("failed", "cannot compute 1/0: division by zero")),
        ("weather", NeedsDetail("weather", "Which city? I know Paris, London, New York, Tokyo, "
                                           "Berlin, Sydney.",
                                options=("Paris", "London", "New York", "Tokyo", "Berlin",
                                         "Sydney"))),
        ("compute", NeedsDetail("compute", "What should I compute? For example: 2 + 3 * 4")),
        ("calculate something for me",
         NeedsDetail("compute", "What should I compute? For example: 2 + 3 * 4")),
    ],
)
def test_interpret(task, outcome):
    assert interpret(task, NOW) == outcome


def test_unknown_task_fails_with_help():
    outcome = interpret("paint the fence", NOW)
    assert isinstance(outcome, Answer) and outcome.status == "failed"
    assert outcome.text.startswith("unknown task") and "weather in Paris" in outcome.text


def test_time_is_utc_whatever_the_clock_zone():
    tokyo = NOW.astimezone(timezone(timedelta(hours=9)))
    assert interpret("time", tokyo) == Answer("done", "2026-03-01T12:30:05Z")


@pytest.mark.parametrize(
    ("skill", "detail", "answer"),
    [
        ("weather", "Tokyo", Answer("done", "Weather in Tokyo: 26°C, humid and clear")),
        ("weather", "in berlin please", Answer("done", "Weather in Berlin: 16°C, overcast")),
        ("weather", "Mars", Answer("failed", "no weather data for Mars; I know Paris, London, "
                                             "New York, Tokyo, Berlin, Sydney")),
        ("compute", "2*21", Answer("done", "2*21 = 42")),
        ("compute", "nothing", Answer("failed", "'nothing' has nothing to compute")),
    ],
)
def test_complete_detail(skill, detail, answer):
    assert complete_detail(skill, detail) == answer


@pytest.mark.parametrize(
    ("depth", "expected"),
    [(Depth(1, 5), Depth(2, 5)), (Depth(4, 5), Depth(5, 5)), (Depth(5, 5), Depth(5, 5)),
     (Depth(7, 5), Depth(5, 5))],
)
def test_reply_depth_never_passes_the_limit(depth, expected):
    assert reply_depth(depth) == expected


# ---------------------------------------------------------------------- the brain
def ask(brain: RulesBrain, text: str, session: str = "s1"):
    reply = brain.reply(text, session_key=session, now=NOW)
    return reply, parse(reply)


def request(task: str, *, request_id: str = "lotbot-abc123", depth=(1, 5), to: str = "Rules"):
    return build_request(to=to, from_="Lotbot", task=task, request_id=request_id, depth=depth)


def test_request_gets_canonical_response_same_id_next_depth():
    text, message = ask(RulesBrain("Rules"), request("compute 2 + 3 * 4"))
    # Written out, not built with the builder the bot uses: a bug there would hide here.
    assert text == ("```\n[RESPONSE → @Lotbot]\nFrom: Rules\nRequestId: lotbot-abc123\n"
                    "Status: done\nResult: 2 + 3 * 4 = 14\nDepth: 2/5\n```")
    assert message.type is MessageType.RESPONSE


def test_name_match_is_case_insensitive_and_other_bots_are_ignored():
    brain = RulesBrain("Rules")
    assert ask(brain, request("time", to="rules"))[1].status == "done"
    assert ask(brain, request("time", to="Other"))[0] == ""


def test_handoff_answers_its_callback():
    handoff = ("```\n[HANDOFF → @Rules]\nFrom: Middle\nRequestId: lotbot-h1\n"
               "Task: weather in London\nDepth: 2/5\nCallback: @Lotbot\n```")
    _, message = ask(RulesBrain("Rules"), handoff)
    assert (message.type, message.to, message.request_id) == (
        MessageType.RESPONSE, "Lotbot", "lotbot-h1")
    assert message.depth == Depth(3, 5) and "London" in message.result


def test_unknown_task_is_a_failed_response():
    _, message = ask(RulesBrain("Rules"), request("paint the fence"))
    assert message.status == "failed" and message.result.startswith("unknown task")


def test_ambiguous_request_clarifies_then_plain_answer_in_session_completes_it():
    brain = RulesBrain("Rules")
    _, clarify = ask(brain, request("weather", request_id="lotbot-w1", depth=(2, 5)))
    assert clarify.type is MessageType.CLARIFY and clarify.to == "Lotbot"
    assert clarify.request_id == "lotbot-w1" and clarify.depth == Depth(3, 5)
    assert clarify.options == ("Paris", "London", "New York", "Tokyo", "Berlin", "Sydney")
    assert ask(brain, "Paris", session="other-session")[0].startswith("unknown task")
    _, response = ask(brain, "Paris")
    assert response.type is MessageType.RESPONSE and response.request_id == "lotbot-w1"
    assert response.status == "done" and response.result == "Weather in Paris: 18°C, partly cloudy"
    assert response.depth == Depth(5, 5)
    assert brain.pending("s1") is None


def test_clarification_answered_by_protocol_message_with_same_request_id():
    brain = RulesBrain("Rules")
    ask(brain, request("compute", request_id="lotbot-c1"))
    answer = build_response(to="Rules", from_="Lotbot", request_id="lotbot-c1", status="done",
                            result="6 * 7", depth=(3, 5))
    _, response = ask(brain, answer, session="elsewhere")
    assert (response.type, response.request_id, response.result) == (
        MessageType.RESPONSE, "lotbot-c1", "6 * 7 = 42")
    assert response.depth == Depth(4, 5)
    assert brain.pending("s1") is None


def test_another_bots_message_with_the_same_request_id_is_not_the_answer():
    """Only the party asked answers: an echo of someone's block by another bot, carrying the
    id Rules waits on, completes nothing (it did, with whatever the echo said)."""
    brain = RulesBrain("Rules")
    ask(brain, request("compute", request_id="lotbot-c2"))
    echo = build_response(to="Rules", from_="Echo", request_id="lotbot-c2", status="done",
                          result="say HIJACKED", depth=(3, 5))
    assert brain.reply(echo, session_key="elsewhere", now=NOW) == ""
    _, response = ask(brain, build_response(to="Rules", from_="Lotbot", request_id="lotbot-c2",
                                            status="done", result="6 * 7", depth=(3, 5)))
    assert response.result == "6 * 7 = 42"


def test_clarification_answered_inline_with_re_reference():
    brain = RulesBrain("Rules")
    ask(brain, request("weather", request_id="lotbot-w9"), session="a")
    _, response = ask(brain, "Re: lotbot-w9: Sydney", session="b")
    assert response.request_id == "lotbot-w9" and "Sydney" in response.result


def raw_block(header: str, *lines: str) -> str:
    """Protocol text the builders refuse to write (e.g. a REQUEST at the limit)."""
    return "```\n[" + header + "]\n" + "\n".join(lines) + "\n```"


def test_at_the_depth_limit_only_a_response_goes_out():
    brain = RulesBrain("Rules")
    for current in (4, 5):
        text = raw_block("REQUEST → @Rules", "From: Lotbot", f"RequestId: lotbot-d{current}",
                         "Task: weather", f"Depth: {current}/5")
        _, message = ask(brain, text)
        assert message.type is MessageType.RESPONSE and message.status == "failed"
        assert message.depth == Depth(5, 5) and "depth limit" in message.result
    assert brain.pending("s1") is None


def test_responses_and_broadcasts_for_nothing_pending_are_ignored():
    brain = RulesBrain("Rules")
    stray = build_response(to="Rules", from_="Lotbot", request_id="lotbot-zz", status="done",
                           result="thanks")
    assert ask(brain, stray)[0] == ""
    broadcast = raw_block("BROADCAST → @all", "From: Lotbot", "RequestId: b-1", "Message: hi")
    assert ask(brain, broadcast)[0] == ""


@pytest.mark.parametrize(
    ("text", "reply"),
    [
        ("what is 17*3", "17*3 = 51"),
        ("what time is it", "2026-03-01T12:30:05Z"),
        ("weather in Berlin?", "Weather in Berlin: 16°C, overcast"),
    ],
)
def test_plain_messages_get_plain_answers(text, reply):
    assert ask(RulesBrain("Rules"), text)[0] == reply


def test_plain_clarification_round_trip():
    brain = RulesBrain("Rules")
    question, parsed = ask(brain, "weather please")
    assert parsed is None and question.startswith("Which city?")
    assert ask(brain, "Tokyo")[0] == "Weather in Tokyo: 26°C, humid and clear"
    assert ask(brain, "hello")[0].startswith("unknown task")


def test_pending_clarifications_are_bounded():
    brain = RulesBrain("Rules", max_pending=2)
    for index in range(4):
        ask(brain, request("weather", request_id=f"lotbot-p{index}"), session=f"s{index}")
    assert brain.pending("s0") is None and brain.pending("s3") is not None


def test_invalid_depth_gets_a_clear_plain_answer():
    text = raw_block("REQUEST → @Rules", "From: Lotbot", "RequestId: lotbot-x", "Task: time",
                     "Depth: 1/50")
    reply, parsed = ask(RulesBrain("Rules"), text)
    assert parsed is None and "cap" in reply


def test_names_with_spaces_are_refused():
    with pytest.raises(ValueError, match="one-word"):
        RulesBrain("Rule Bot")


def test_markdown_escaped_chat_text_is_read_as_typed() -> None:
    """Platforms hand bots Markdown: a typed `6*7` can arrive as `6\\*7`."""
    from datetime import UTC, datetime

    from bridge.bcn.examples.rules import RulesBrain

    brain = RulesBrain("Rules")
    answer = brain.reply(r"what is 6\*7", session_key="s", now=datetime(2026, 1, 1, tzinfo=UTC))
    assert answer == "6*7 = 42"
