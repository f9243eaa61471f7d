"""bridge.fastjson: orjson's speed, the standard library's rules for whatever orjson refuses."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge import fastjson
from tests.support.any_text import ANY_TEXT, sendable

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@pytest.fixture(params=["orjson", "standard library"])
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The module as it runs with orjson, and as it runs where orjson is not installed."""
    if request.param == "standard library":
        monkeypatch.setattr(fastjson, "orjson", None)
    else:
        assert fastjson.orjson is not None, "orjson is a dependency of bcn-bridge"
    return fastjson


@given(JSON_VALUES)
def test_what_it_writes_is_the_json_of_the_value(value: Any) -> None:
    text = fastjson.dumps(value)
    assert json.loads(text) == value
    assert fastjson.loads(text) == value


@pytest.mark.parametrize("value", [
    {"seq": 2**70},
    {1: "a key that is not a string"},
])
def test_what_orjson_refuses_to_write_the_standard_library_writes(codec: Any, value: Any) -> None:
    assert json.loads(codec.dumps(value)) == json.loads(json.dumps(value))


def test_output_is_compact_utf8_text(codec: Any) -> None:
    assert codec.dumps({"type": "pong", "name": "Jürgen"}) == '{"type":"pong","name":"Jürgen"}'


@pytest.mark.parametrize("text", [
    '{"a": NaN}',
    '{"n": 123456789012345678901234567890}',
])
def test_what_orjson_refuses_to_read_the_standard_library_reads(codec: Any, text: str) -> None:
    read = codec.loads(text)
    expected = json.loads(text)
    if text.startswith('{"n"') and codec.orjson is not None:
        assert read == {"n": float(expected["n"])}  # orjson reads a 96-bit integer as a float
    elif text.startswith('{"a"'):
        assert repr(read) == repr(expected)  # NaN != NaN
    else:
        assert read == expected


@pytest.mark.parametrize("text", ["{", "[1,]", "", "nul", '{"a" 1}'])
def test_malformed_json_raises_value_error_as_the_standard_library_does(
    codec: Any, text: str
) -> None:
    with pytest.raises(ValueError):
        codec.loads(text)


def test_deep_nesting_ends_as_the_standard_library_ends_it(codec: Any) -> None:
    with pytest.raises(RecursionError):
        codec.loads("[" * 100_000 + "]" * 100_000)


@dataclass
class Deadline:
    at: datetime


def test_dates_and_dataclasses_go_to_default_as_with_the_standard_library(codec: Any) -> None:
    moment = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    assert codec.dumps({"due": moment}, default=str) == '{"due":"2026-12-01 12:00:00+00:00"}'
    assert json.loads(codec.dumps({"d": Deadline(moment)}, default=str)) == {
        "d": str(Deadline(moment))
    }
    with pytest.raises(TypeError):
        codec.dumps({"due": moment})


# ---------------------------------------------------------------- valid Unicode (issue 31)
ANY_VALUES = st.recursive(
    st.none() | st.integers(-(2**63), 2**63 - 1) | ANY_TEXT,
    lambda children: st.lists(children) | st.dictionaries(ANY_TEXT, children),
    max_leaves=20,
)


@pytest.mark.parametrize(("wire", "read"), [
    ('{"text":"a\\ud800b"}', {"text": "a\ufffdb"}),  # the webchat frame of issue 31
    ('{"\\udfff":["\\ud800\\ud800"]}', {"\ufffd": ["\ufffd\ufffd"]}),
    ('"\\ud83d\\ude00"', "\U0001f600"),  # a pair escaped is its one character
    (b'"a\xed\xa0\x80"', "a\ufffd"),  # a surrogate encoded raw (CESU-8 style)
    ('{"a": NaN, "t": "\\udc00"}', None),  # another refusal takes the same door
])
def test_a_lone_surrogate_reads_as_the_replacement_character(
    codec: Any, wire: str | bytes, read: Any
) -> None:
    value = codec.loads(wire)
    if read is None:
        assert value["t"] == "\ufffd"
    else:
        assert value == read
    assert sendable(value)


def test_a_lone_surrogate_is_written_as_the_replacement_character(codec: Any) -> None:
    text = codec.dumps({"text": "a\ud800b", "\udc00": ["\ud83d\ude00"]})
    assert text == '{"text":"a\ufffdb","\ufffd":["\U0001f600"]}'
    text.encode("utf-8")


@given(ANY_VALUES)
def test_whatever_it_reads_is_valid_unicode(value: Any) -> None:
    """Any JSON on the wire, escaped (ASCII) or not, reads as valid Unicode."""
    for wire in (json.dumps(value), json.dumps(value, ensure_ascii=False)):
        assert sendable(fastjson.loads(wire.encode("utf-8", "surrogatepass")))
        assert sendable(fastjson.loads(wire))


@given(ANY_VALUES)
def test_whatever_it_writes_can_be_sent(value: Any) -> None:
    fastjson.dumps(value).encode("utf-8")


@given(JSON_VALUES)
def test_valid_text_reads_and_writes_unchanged(value: Any) -> None:
    """The door changes nothing that was valid (st.text() draws no lone surrogate)."""
    assert fastjson.loads(fastjson.dumps(value)) == value


def test_sorted_keys_give_equal_text_for_equal_objects() -> None:
    one = {"b": 1, "a": {"d": [1, 2], "c": None}}
    other = {"a": {"c": None, "d": [1, 2]}, "b": 1}
    assert fastjson.dumps(one, sort_keys=True) == fastjson.dumps(other, sort_keys=True) == \
        '{"a":{"c":null,"d":[1,2]},"b":1}'
    assert fastjson.dumps({"z": "\ud800", "y": 10**30}, sort_keys=True) == \
        '{"y":1000000000000000000000000000000,"z":"\ufffd"}'  # the standard library's path
