"""A page that stops reading must not hold up its room, nor pile up frames in memory; the
frames of one loop turn go out together at its end, in order for each page."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from adapters.webchat import WebchatAccountConfig
from adapters.webchat.chat import Webchat
from adapters.webchat.session import WebchatSession
from adapters.webchat.visitors import ClientIds, Visitor
from adapters.webchat.writes import SURE_TO_FIT, EndOfTurn, PageWriter


class Transport:
    """A page's socket; `buffered` bytes wait in its send buffer (a page that stopped reading
    has a full one)."""

    def __init__(self, buffered: int = 0) -> None:
        self.buffered = buffered
        self.aborted = asyncio.Event()

    def abort(self) -> None:
        self.aborted.set()

    def get_write_buffer_size(self) -> int:
        return self.buffered


class Socket:
    """A page's WebSocket: a send returns at once while the buffer has room and waits for
    ever once it is full (the page does not read); it ends when the transport is aborted."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.frames: list[str] = []

    @property
    def closed(self) -> bool:
        return self.transport.aborted.is_set()

    async def send_str(self, data: str) -> None:
        if self.transport.buffered + 4 * len(data) >= SURE_TO_FIT:
            await asyncio.Event().wait()
        self.frames.append(data)

    async def __aiter__(self) -> AsyncIterator[object]:
        await self.transport.aborted.wait()
        return
        yield


class Page:
    client_id = "c-fast"
    name = "Fast"

    def __init__(self) -> None:
        self.frames: list[str] = []

    async def send_text(self, data: str) -> None:
        self.frames.append(data)


async def _nothing(*_: object) -> None:
    return None


def session_on(socket: Socket, chat: Webchat | None = None,
               turn: EndOfTurn | None = None) -> WebchatSession:
    return WebchatSession(
        socket, chat or Webchat(WebchatAccountConfig()), _nothing,  # type: ignore[arg-type]
        transport=socket.transport, send_timeout=0.05, turn=turn,
        ids=ClientIds(), visitor=Visitor("127.0.0.1", 1),
    )


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Until `condition()` holds; fails after `timeout` (a bound, never asserted as a time)
    instead of polling for ever."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.001)


async def test_a_page_that_stops_reading_is_cut_off_and_the_room_goes_on() -> None:
    chat = Webchat(WebchatAccountConfig())
    stuck_socket = Socket(Transport(buffered=256 * 1024))
    stuck = session_on(stuck_socket, chat)
    fast = Page()
    room = chat.rooms.open("lobby")
    room.members.update({stuck, fast})

    await asyncio.wait_for(room.broadcast({"type": "pong"}), 5)  # never waits for `stuck`

    assert fast.frames == ['{"type":"pong"}']
    await asyncio.wait_for(stuck_socket.transport.aborted.wait(), 5)
    assert stuck_socket.frames == []


async def test_a_session_cut_off_while_answering_ends_quietly_and_leaves_its_room() -> None:
    chat = Webchat(WebchatAccountConfig())
    socket = Socket(Transport(buffered=256 * 1024))
    session = session_on(socket, chat)
    room = chat.rooms.open("lobby")
    session.room = room
    room.members.add(session)

    await asyncio.wait_for(session.run(), 5)  # the hello frame is never taken

    assert socket.transport.aborted.is_set()
    assert session not in room.members


async def test_a_frame_too_large_for_an_empty_buffer_still_has_the_timeout() -> None:
    # One large frame fills the buffer by itself; if the page then stops reading, its write
    # waits, so it goes to a task with the timer, never into the end-of-turn callback.
    socket = Socket(Transport())
    session = session_on(socket)

    await asyncio.wait_for(session.send_text("x" * 20_000), 5)

    await asyncio.wait_for(socket.transport.aborted.wait(), 5)
    assert socket.frames == []


async def test_the_frames_of_a_turn_are_written_together_when_it_ends() -> None:
    turn = EndOfTurn()
    sockets = [Socket(Transport()) for _ in range(3)]
    sessions = [session_on(socket, turn=turn) for socket in sockets]

    for n, session in enumerate(sessions):
        await session.send_text(f"ack {n}")
        await session.send_text(f"reply {n}")
    written_meanwhile = [list(socket.frames) for socket in sockets]
    await asyncio.sleep(0)  # the turn ends

    assert written_meanwhile == [[], [], []]
    assert [socket.frames for socket in sockets] == [
        [f"ack {n}", f"reply {n}"] for n in range(3)
    ]


async def test_a_page_gets_its_frames_in_order_when_a_large_one_must_wait() -> None:
    socket = Socket(Transport())
    session = session_on(socket)
    session.writer.send_timeout = 5.0
    large = "L" * 5_000  # does not fit at once: written by a task that may wait

    await session.send_text("first")
    await session.send_text(large)
    await session.send_text("last")
    await asyncio.sleep(0)
    assert socket.frames == ["first"]  # the large one waits for the page

    socket.transport.buffered = -SURE_TO_FIT  # the page read everything: room for anything
    await asyncio.wait_for(until(lambda: len(socket.frames) == 3), 5)
    assert socket.frames == ["first", large, "last"]
    assert not socket.transport.aborted.is_set()


async def test_what_waits_for_one_page_is_bounded() -> None:
    socket = Socket(Transport(buffered=256 * 1024))
    writer = PageWriter(socket, socket.transport, EndOfTurn(), send_timeout=60,
                        max_backlog=10_000)

    for _ in range(20):
        writer.send("x" * 1_000)

    assert socket.transport.aborted.is_set()  # cut off at the cap, not after the timeout
    writer.send("more")
    await asyncio.sleep(0)
    assert socket.frames == []


class BrokenSocket(Socket):
    async def send_str(self, data: str) -> None:
        raise ValueError("a bug in the socket")


async def test_one_page_failing_to_write_strands_no_other_page() -> None:
    turn = EndOfTurn()
    broken = BrokenSocket(Transport())
    sockets = [Socket(Transport()), broken, Socket(Transport())]
    for socket in sockets:
        await session_on(socket, turn=turn).send_text("hi")

    await asyncio.sleep(0)

    assert [socket.frames for socket in sockets] == [["hi"], [], ["hi"]]
    assert broken.transport.aborted.is_set()
