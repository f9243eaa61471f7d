"""A person's name with blanks is a header target: written percent-encoded, read back whole.

Issue 31 §2: `/ask` from "Ada Lovelace" could never be answered, because the RESPONSE to her
could not be built (`to must be a single bot name without spaces`).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bridge.protocol import (
    build_clarify,
    build_handoff,
    build_request,
    build_response,
    parse,
)
from bridge.protocol.names import decode_name, encode_name
from bridge.protocol.syntax import JS_WHITESPACE

ANY_CHARACTER = st.characters(min_codepoint=0, max_codepoint=0x10FFFF)
NAMES = st.text(ANY_CHARACTER, min_size=1, max_size=40).filter(
    lambda name: name.strip(JS_WHITESPACE) != ""
)


def test_a_spaced_name_is_written_encoded_and_read_back() -> None:
    text = build_response(to="Ada Lovelace", from_="Rules", request_id="col-1", result="42")
    assert "[RESPONSE → @Ada%20Lovelace]" in text
    assert parse(text).to == "Ada Lovelace"


def test_the_article_dialect_reads_the_same_name() -> None:
    unfenced = "[RESPONSE -> Ada%20Lovelace]\nFrom: Rules\nRequestId: col-1\nResult: 42"
    fenced_without_at = f"```\n{unfenced}\n```"
    assert parse(unfenced).to == "Ada Lovelace"
    assert parse(fenced_without_at).to == "Ada Lovelace"


def test_names_that_only_look_encoded_are_kept_as_written() -> None:
    for literal in ("50%off", "a%41", "x%2", "%", "Bot%e2%82%ac", "%FF%FE"):
        assert decode_name(literal) == literal
        text = f"```\n[REQUEST → @{literal}]\nFrom: A\nRequestId: r\nTask: t\n```"
        assert parse(text).to == literal


@given(NAMES)
def test_every_name_round_trips_through_every_builder(name: str) -> None:
    assert decode_name(encode_name(name)) == name
    built = [
        build_request(to=name, from_="A", task="t", request_id="r1"),
        build_response(to=name, from_="A", request_id="r1", status="done"),
        build_clarify(to=name, from_="A", request_id="r1", question="which?"),
        build_handoff(to=name, from_="A", request_id="r1", task="t"),
    ]
    for text in built:
        parsed = parse(text)
        assert parsed is not None, text
        assert parsed.to == name


@given(st.text(ANY_CHARACTER, max_size=40))
def test_decoding_any_target_never_raises(target: str) -> None:
    decoded = decode_name(target)
    assert decoded == target or encode_name(decoded) == target
