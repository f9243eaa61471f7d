"""The echo example bot over a real socket."""

from __future__ import annotations

from bot_fake_bcn import send_params
from hypothesis import given
from hypothesis import strategies as st

from bridge.bcn.examples.echo import build_echo_bot, stream_pieces
from bridge.retry import Backoff


@given(st.text())
def test_stream_pieces_join_back_to_the_text(text: str) -> None:
    assert "".join(stream_pieces(text)) == text


def test_stream_pieces_are_words() -> None:
    assert stream_pieces("  hello big  world ") == ["  ", "hello ", "big  ", "world "]


async def test_echo_streams_word_by_word_then_final(fake_bcn, tmp_path):
    bot = build_echo_bot(fake_bcn.url, token_file=tmp_path / "echo.token",
                         backoff=Backoff(initial=0.01))
    async with bot:
        run_id = (await fake_bcn.request("chat.send", send_params("one two three")))["run_id"]
        final = await fake_bcn.wait_terminal(run_id)
    texts = [(e["state"], e["message"]["content"][0]["text"]) for e in fake_bcn.events(run_id)]
    assert texts == [("delta", "one "), ("delta", "two "), ("delta", "three"),
                     ("final", "one two three")]
    assert final["state"] == "final"
    assert fake_bcn.connect_params[0]["name"] == "Echo"


async def test_echo_without_streaming_sends_one_final(fake_bcn):
    async with build_echo_bot(fake_bcn.url, name="Fast", stream=False):
        run_id = (await fake_bcn.request("chat.send", send_params("one two")))["run_id"]
        await fake_bcn.wait_terminal(run_id)
    events = fake_bcn.events(run_id)
    assert [(e["state"], e["message"]["content"][0]["text"]) for e in events] == [
        ("final", "one two")]
