"""A page that stops reading must not hold up its room, nor pile up frames in memory."""

from __future__ import annotations

import asyncio

import pytest

from adapters.webchat import WebchatAccount
from adapters.webchat.chat import Webchat
from adapters.webchat.session import WebchatSession
from adapters.webchat.visitors import ClientIds, Visitor


class StuckSocket:
    """A socket whose peer never reads: every send waits for ever."""

    closed = False

    async def send_str(self, data: str) -> None:
        await asyncio.Event().wait()


class Transport:
    """The socket of a page that stopped reading: its send buffer is full."""

    def __init__(self) -> None:
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True

    def get_write_buffer_size(self) -> int:
        return 256 * 1024


class Page:
    client_id = "c-fast"
    name = "Fast"

    def __init__(self) -> None:
        self.frames: list[str] = []

    async def send_text(self, data: str) -> None:
        self.frames.append(data)


async def _nothing(*_: object) -> None:
    return None


async def test_a_page_that_stops_reading_is_cut_off_and_the_room_goes_on() -> None:
    chat = Webchat(WebchatAccount())
    transport = Transport()
    stuck = WebchatSession(
        StuckSocket(), chat, _nothing, transport=transport, send_timeout=0.05,  # type: ignore[arg-type]
        ids=ClientIds(), visitor=Visitor("127.0.0.1", 1),
    )
    fast = Page()
    room = chat.rooms.open("lobby")
    room.members.update({stuck, fast})

    await asyncio.wait_for(room.broadcast({"type": "pong"}), 5)

    assert fast.frames == ['{"type":"pong"}']
    assert transport.aborted


async def test_a_session_cut_off_while_answering_ends_quietly_and_leaves_its_room() -> None:
    chat = Webchat(WebchatAccount())
    transport = Transport()
    session = WebchatSession(
        StuckSocket(), chat, _nothing, transport=transport, send_timeout=0.05,  # type: ignore[arg-type]
        ids=ClientIds(), visitor=Visitor("127.0.0.1", 1),
    )
    room = chat.rooms.open("lobby")
    session.room = room
    room.members.add(session)

    await asyncio.wait_for(session.run(), 5)  # the hello frame is never taken

    assert transport.aborted
    assert session not in room.members


class EmptyBufferTransport(Transport):
    """A page that read everything so far."""

    def get_write_buffer_size(self) -> int:
        return 0


async def test_a_frame_too_large_for_an_empty_buffer_still_has_the_timeout() -> None:
    # One large frame fills the buffer by itself; if the page then stops reading, the send
    # waits for it, so it must not skip the timer the small, sure-to-fit frames skip.
    transport = EmptyBufferTransport()
    session = WebchatSession(
        StuckSocket(), Webchat(WebchatAccount()), _nothing, transport=transport,  # type: ignore[arg-type]
        send_timeout=0.05, ids=ClientIds(), visitor=Visitor("127.0.0.1", 1),
    )

    with pytest.raises(TimeoutError):
        await asyncio.wait_for(session.send_text("x" * 20_000), 5)

    assert transport.aborted
