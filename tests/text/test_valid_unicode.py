"""bridge.text.unicode: lone surrogates become U+FFFD; valid text is left as it is."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.text.unicode import REPLACEMENT, valid_unicode, valid_unicode_in
from tests.support.any_text import ANY_TEXT, sendable


@pytest.mark.parametrize(("text", "valid"), [
    ("a\ud800b", "a\ufffdb"),
    ("\udfff", "\ufffd"),
    ("\ud800\ud800", "\ufffd\ufffd"),
    ("\ude00\ud83d", "\ufffd\ufffd"),  # a low half before a high one pairs with nothing
    ("\ud83d\ude00", "\U0001f600"),  # a pair is the character it encodes
    ("x\ud800\ud800\udc00y", "x\ufffd\U00010000y"),
])
def test_lone_surrogates_become_the_replacement_character(text: str, valid: str) -> None:
    assert valid_unicode(text) == valid


@given(ANY_TEXT)
def test_whatever_comes_in_goes_out_valid_and_stays_so(text: str) -> None:
    valid = valid_unicode(text)
    valid.encode("utf-8")
    assert valid_unicode(valid) is valid  # once, at the door: a second pass changes nothing


def _read_as_utf16(text: str) -> str:
    """The oracle, one code point at a time: a high half then a low half is one character,
    any other half is U+FFFD, everything else is itself."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        pair = text[i:i + 2]
        if len(pair) == 2 and "\ud800" <= c <= "\udbff" and "\udc00" <= pair[1] <= "\udfff":
            out.append(chr(0x10000 + ((ord(c) - 0xD800) << 10) + ord(pair[1]) - 0xDC00))
            i += 2
            continue
        out.append(REPLACEMENT if "\ud800" <= c <= "\udfff" else c)
        i += 1
    return "".join(out)


@given(ANY_TEXT)
def test_only_surrogates_change(text: str) -> None:
    assert valid_unicode(text) == _read_as_utf16(text)


@given(st.text())  # st.text() draws no surrogate: valid text
def test_valid_text_is_the_same_object(text: str) -> None:
    assert valid_unicode(text) is text


def test_documents_are_rebuilt_only_where_something_changed() -> None:
    clean = {"a": ["b", 1, None], "c": ("d",)}
    assert valid_unicode_in(clean) is clean
    dirty = {"a": ["b", "\ud800"], "\udc00": ("d", "\ud801"), "n": 2}
    assert valid_unicode_in(dirty) == {"a": ["b", "\ufffd"], "\ufffd": ("d", "\ufffd"), "n": 2}
    assert dirty["a"][1] == "\ud800"  # the document given is not changed


@given(st.recursive(st.none() | st.integers() | ANY_TEXT,
                    lambda kids: st.lists(kids) | st.dictionaries(ANY_TEXT, kids)))
def test_every_string_of_a_document_comes_out_valid(document: object) -> None:
    assert sendable(valid_unicode_in(document))
