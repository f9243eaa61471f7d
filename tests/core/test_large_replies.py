"""One huge bot reply must not cost every other chat its turn."""

from __future__ import annotations

import asyncio

import pytest

from bridge.core.adapter import Capabilities
from bridge.core.binding import Binding
from bridge.core.outbound import truncated
from bridge.core.render import OFF_LOOP_CHARS, render_parts, render_parts_soon
from bridge.text import split as split_module
from bridge.text import split_for

BINDING = Binding(channel="t:main", chat="room", group="g")
DISCORD = Capabilities(dialect="discord", max_length=1900)


def paragraphs(chars: int) -> str:
    return ("some words in a line of a long reply " * 3 + "\n\n") * (chars // 116)


async def test_a_long_output_is_rendered_while_the_loop_keeps_turning() -> None:
    turns = 0
    stop = asyncio.Event()

    async def other_chats() -> None:
        nonlocal turns
        while not stop.is_set():
            turns += 1
            await asyncio.sleep(0)

    ticker = asyncio.create_task(other_chats())
    await asyncio.sleep(0)
    before = turns
    parts = await render_parts_soon(paragraphs(4 * OFF_LOOP_CHARS), BINDING, DISCORD)
    during = turns - before
    stop.set()
    await ticker
    assert len(parts) > 10
    assert during > 1  # other coroutines ran while it rendered
    assert parts == render_parts(paragraphs(4 * OFF_LOOP_CHARS), BINDING, DISCORD)


def test_splitting_grows_linearly_with_the_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work, counted as cut positions looked at, not time: 10x the text, at most ~12x."""
    looked_at = 0
    real = split_module._Splitter._allowed

    def counting(self, start: int, cut: int, room: int) -> bool:  # type: ignore[no-untyped-def]
        nonlocal looked_at
        looked_at += 1
        return real(self, start, cut, room)

    monkeypatch.setattr(split_module._Splitter, "_allowed", counting)
    work = []
    for size in (20_000, 200_000):
        looked_at = 0
        for text in (paragraphs(size), "x" * size):  # with breaks, and one endless word
            split_for(text, "discord", limit=1900)
        work.append(looked_at)
    assert work[1] <= 12 * work[0], work


def test_a_reply_past_the_maximum_is_cut_on_a_line_and_says_so() -> None:
    reply = "\n".join(f"line {n} " + "x" * 40 for n in range(5000))  # ~235,000 characters
    cut = truncated(reply, 100_000)
    assert len(cut) <= 100_200
    assert cut.endswith(f"(reply truncated: {len(reply):,} characters; the first "
                        f"{cut.index(chr(10) * 2 + '…'):,} are shown)")
    kept = cut[: cut.index("\n\n…")]
    assert reply.startswith(kept) and reply[len(kept)] == "\n"  # ends at a line break
    assert truncated("short", 100_000) == "short"
