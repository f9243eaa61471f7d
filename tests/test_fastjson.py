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
    {"text": "a lone surrogate \ud800 from a platform's JSON"},
    {"seq": 2**70},
    {1: "a key that is not a string"},
])
def test_what_orjson_refuses_to_write_the_standard_library_writes(codec: Any, value: Any) -> None:
    assert json.loads(codec.dumps(value)) == json.loads(json.dumps(value))


def test_output_is_compact_utf8_text(codec: Any) -> None:
    assert codec.dumps({"type": "pong", "name": "Jürgen"}) == '{"type":"pong","name":"Jürgen"}'


@pytest.mark.parametrize("text", [
    '{"a": NaN}',
    '"\\ud800"',
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
