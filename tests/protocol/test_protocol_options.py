"""A CLARIFY's choices (`Options: A | B | C`): built, parsed, refused, and round-tripped."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.protocol import (
    MAX_OPTION_LENGTH,
    MAX_OPTIONS,
    MessageType,
    ProtocolMessage,
    build_clarify,
    build_request,
    format_options,
    options_of,
    parse,
)
from bridge.protocol.syntax import JS_WHITESPACE
from tests.support.any_text import ANY_CHARACTER, ANY_TEXT


def clarify(**extra: Any) -> str:
    return build_clarify(to="Lotbot", from_="Mantis", request_id="lotbot-r1",
                         question="Which city?", **extra)


def fenced(body: str, header: str = "[CLARIFY → @Lotbot]") -> str:
    return f"```\n{header}\nFrom: Mantis\nRequestId: lotbot-r1\nQuestion: Which city?\n{body}```"


# --- building ---------------------------------------------------------------------------

def test_build_writes_options_after_the_question() -> None:
    assert clarify(options=["Paris", "Oslo", "somewhere else"]) == (
        "```\n[CLARIFY → @Lotbot]\nFrom: Mantis\nRequestId: lotbot-r1\nQuestion: Which city?\n"
        "Options: Paris | Oslo | somewhere else\nDepth: 1/5\n```"
    )


def test_build_without_options_is_unchanged() -> None:
    plain = ("```\n[CLARIFY → @Lotbot]\nFrom: Mantis\nRequestId: lotbot-r1\n"
             "Question: Which city?\nDepth: 1/5\n```")
    assert clarify() == plain
    assert clarify(options=None) == plain
    assert clarify(options=[]) == plain


def test_build_trims_each_choice() -> None:
    built = clarify(options=("  Paris ", "\u3000Oslo\ufeff"))
    assert "Options: Paris | Oslo\n" in built
    assert options_of(parse(built)) == ("Paris", "Oslo")


def test_format_options() -> None:
    assert format_options(["A", "B c", "ü"]) == "A | B c | ü"
    assert format_options([]) == ""
    assert format_options(iter(["x"])) == "x"
    assert format_options(["x" * MAX_OPTION_LENGTH]) == "x" * MAX_OPTION_LENGTH
    assert format_options([str(n) for n in range(MAX_OPTIONS)]).count(" | ") == MAX_OPTIONS - 1


@pytest.mark.parametrize(
    ("choices", "message"),
    [
        (["Paris", ""], r"option 2 \(''\) is blank"),
        (["Paris", " \t\u3000"], r"option 2 \(' \\t\\u3000'\) is blank"),
        (["Paris", "Oslo\nBergen"], r"option 2 \('Oslo\\nBergen'\) must be one line"),
        (["Oslo\rBergen"], r"option 1 .* must be one line"),
        (["Oslo\u2028Bergen"], r"option 1 .* must be one line"),
        (["Oslo\x85Bergen"], r"option 1 .* must be one line"),
        (["Oslo\x0bBergen"], r"option 1 .* must be one line"),
        (["yes", "yes | no"], r"option 2 \('yes \| no'\) must not contain \|"),
        (["a```b"], r"option 1 \('a```b'\) must not contain ```"),
        (["x" * (MAX_OPTION_LENGTH + 1)], r"option 1 \('x{40}'…\) is 81 characters long; "
                                          r"at most 80"),
        (["Paris", "Oslo", " Paris "], r"option 3 \(' Paris '\) is given twice"),
        (["Paris", 42], r"option 2 must be text, got int"),
        (["Paris", None], r"option 2 must be text, got NoneType"),
        ([str(n) for n in range(MAX_OPTIONS + 1)], r"at most 10 options, got 11"),
        ("Paris | Oslo", r"options must be a list of choices, not one string"),
        (b"Paris", r"options must be a list of choices, not one string"),
        (42, r"options must be a list of choices, got int"),
    ],
)
def test_bad_choices_are_refused_by_name(choices: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        format_options(choices)
    with pytest.raises(ValueError, match=message):
        clarify(options=choices)


# --- reading ----------------------------------------------------------------------------

def test_a_clarify_without_options_offers_none() -> None:
    message = parse(clarify())
    assert message is not None
    assert options_of(message) == () == message.options


def test_options_are_kept_in_meta_and_read_by_the_accessor() -> None:
    message = parse(clarify(options=["Paris", "Oslo"]))
    assert message is not None
    assert message.meta == {"Options": "Paris | Oslo"}
    assert message.to_dict()["meta"] == {"Options": "Paris | Oslo"}
    assert message.question == "Which city?"
    assert options_of(message) == ("Paris", "Oslo") == message.options


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("A|B|C", ("A", "B", "C")),
        ("  A  |   B c  | ", ("A", "B c")),
        ("| | A || B |", ("A", "B")),
        ("A | A | B", ("A", "B")),
        ("only one", ("only one",)),
        ("A | " + "x" * (MAX_OPTION_LENGTH + 1) + " | B", ("A", "B")),
        (" | ".join(str(n) for n in range(15)), tuple(str(n) for n in range(MAX_OPTIONS))),
        ("A | B\nC | D", ("A", "B", "C", "D")),  # a list continued on the next line
        ("|", ()),
    ],
)
def test_options_of_is_lenient(value: str, expected: tuple[str, ...]) -> None:
    message = parse(fenced(f"Options: {value}\n"))
    assert message is not None
    assert options_of(message) == expected


def test_the_options_key_is_read_in_any_case() -> None:
    message = parse(fenced("OPTIONS: A | B\n"))
    assert message is not None and message.meta == {"OPTIONS": "A | B"}
    assert message.options == ("A", "B")
    message = parse(fenced("options: A\nOptions: B\n"))
    assert message is not None and message.options == ("B",)


def test_the_article_dialect_reads_options_too() -> None:
    text = ("[CLARIFY -> Lotbot]\nFrom: Mantis\nRequestId: r1\nQuestion: Which?\n"
            "Options: Paris | Oslo\n")
    message = parse(text)
    assert message is not None and message.options == ("Paris", "Oslo")


def test_only_a_clarify_offers_choices() -> None:
    request = build_request(to="Mantis", from_="Lotbot", task="weather")
    text = request.replace("Depth:", "Options: Paris | Oslo\nDepth:")
    message = parse(text)
    assert message is not None and message.meta == {"Options": "Paris | Oslo"}
    assert options_of(message) == ()


# --- properties -------------------------------------------------------------------------

def _valid(choice: str) -> bool:
    try:
        format_options([choice])
    except ValueError:
        return False
    return True


VALID_CHOICE = st.text(ANY_CHARACTER, min_size=1, max_size=MAX_OPTION_LENGTH + 4).filter(_valid)
ARBITRARY_VALUE = st.one_of(ANY_TEXT, st.lists(st.sampled_from(
    ["|", " | ", "A", "B", "\n", "\r", "\u2028", "``", "`", "x" * 81, "Key: v", "\ufeff", " "]
), max_size=30).map("".join))


@settings(max_examples=300, deadline=None)
@given(st.lists(VALID_CHOICE, max_size=MAX_OPTIONS,
                unique_by=lambda choice: choice.strip(JS_WHITESPACE)))
def test_any_valid_choices_round_trip_exactly(choices: list[str]) -> None:
    message = parse(clarify(options=choices))
    assert message is not None
    assert options_of(message) == tuple(choice.strip(JS_WHITESPACE) for choice in choices)
    trimmed = [choice.strip(JS_WHITESPACE) for choice in choices]
    assert options_of(parse(clarify(options=trimmed))) == tuple(trimmed)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(ARBITRARY_VALUE)
def test_options_of_never_raises_and_gives_only_valid_choices(value: str) -> None:
    message = ProtocolMessage(type=MessageType.CLARIFY, to="Lotbot", from_="Mantis",
                              request_id="r1", question="Which?", meta={"Options": value})
    _check_read(options_of(message))
    parsed = parse(fenced(f"Options: {value}\n"))
    if parsed is not None:  # else the value closed the block early
        _check_read(options_of(parsed))


def _check_read(choices: tuple[str, ...]) -> None:
    assert isinstance(choices, tuple) and len(choices) <= MAX_OPTIONS
    format_options(choices)  # every choice read is one a builder writes: no ValueError
    if choices:
        assert options_of(parse(clarify(options=choices))) == choices  # type: ignore[arg-type]
