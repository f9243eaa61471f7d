"""The plain-line shortcut in parse_markdown gives exactly what the full parser gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.text.model import Document
from bridge.text.parse_markdown import _MARKDOWN, _PLAIN_LINE, _blocks, parse_markdown

PIECES = st.sampled_from(
    [*"abcXYZ019 ,.?!'\";:()-*_@#<>&[]`~|\\/\n", "  ", "1.", "http", "www", "a.", "hello"]
)


def full_parse(source: str) -> Document:
    blocks, _ = _blocks(_MARKDOWN.parse(source), 0, source.split("\n"), top_level=True)
    return Document(tuple(blocks))


@settings(max_examples=400)
@given(st.lists(PIECES, max_size=12).map("".join))
def test_shortcut_agrees_with_the_parser(source: str) -> None:
    assert parse_markdown(source) == full_parse(source)


def test_shortcut_is_taken_for_everyday_sentences() -> None:
    sentence = "hello there friends, how are you? fine: ok (yes) it's 42!"
    assert _PLAIN_LINE.fullmatch(sentence)
    assert parse_markdown(sentence) == full_parse(sentence)
