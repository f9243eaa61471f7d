"""A plain message answers a waiting question only when it plausibly is the answer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.core.plain_answers import MAX_PLAIN_ANSWER, plausible_answer

CITIES = ("Paris", "London", "New York")


@pytest.mark.parametrize(("text", "expected"), [
    ("Tokyo", False),                       # names no offered choice
    ("paris", True),
    ("New York please", True),
    ("I'd say london.", True),
    ("Parisian food is great", False),      # a word of its own, not inside another
    ("hello everyone", False),
    ("/requests", False),                   # a command
    ("@Bob Paris is lovely", False),        # talking to someone else
    ("@Rules Paris", True),                 # to the bot that asked
])
def test_with_choices_the_message_must_name_one(text: str, expected: bool) -> None:
    assert plausible_answer(text, asker="Rules", options=CITIES) is expected


@pytest.mark.parametrize(("text", "expected"), [
    ("Paris", True),
    ("in the north, near the sea", True),
    ("x" * (MAX_PLAIN_ANSWER + 1), False),
    ("first paragraph\n\nsecond paragraph", False),
    ("```\n[REQUEST → @Echo]\nFrom: Ada\nRequestId: a-1\nTask: hi\n```", False),
    ("hey @Cy, did you see this?", False),
])
def test_without_choices_a_short_message_to_nobody_else_answers(text: str,
                                                                 expected: bool) -> None:
    assert plausible_answer(text, asker="Rules", mentions=()) is expected


def test_a_platform_mention_of_someone_else_is_not_an_answer() -> None:
    assert not plausible_answer("sure", asker="Rules", mentions=("Bob",))
    assert plausible_answer("sure", asker="Rules", mentions=("@rules",))


@given(st.text(), st.lists(st.text(max_size=20), max_size=10), st.lists(st.text(), max_size=3))
def test_any_text_gets_an_answer_never_an_error(text, options, mentions) -> None:
    assert plausible_answer(text, asker="Rules", options=options,
                            mentions=mentions) in (True, False)
