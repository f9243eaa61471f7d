"""A frame the socket cannot send fails alone; the writer and the connection go on (issue 31).

Over a real WebSocket on 127.0.0.1. `bridge.fastjson.dumps` never writes a lone surrogate
any more (tests/test_fastjson.py), so these tests hand the send queue such a frame directly:
they are about the writer, which must survive whatever one frame does.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import aiohttp
import pytest
from aiohttp import web

from bridge.bcn import BcnError, Connection, ConnectionClosed, Request
from bridge.bcn.send_queue import SendQueue
from tests.fakes.local_server import websocket_to

WAIT = 5.0
"""Upper bound for a frame to arrive; nothing here asserts how long it took."""

UNSENDABLE = '{"type":"event","event":"chat","payload":{"text":"a\ud800b"},"seq":1}'
"""A frame as the hub's writers met it in issue 31: a lone surrogate in it, raw."""


@dataclass
class Ends:
    server: Connection
    client: aiohttp.ClientWebSocketResponse

    async def received(self) -> dict[str, object]:
        message = await self.client.receive(timeout=WAIT)
        assert message.type is aiohttp.WSMsgType.TEXT, message
        return json.loads(message.data)


async def _answer(req: Request) -> dict[str, object]:
    return {"echo": req.params.get("value")}


@asynccontextmanager
async def _serve(wrap: Callable[[web.WebSocketResponse], object] = lambda ws: ws,
                 ) -> AsyncIterator[Ends]:
    """A real WebSocket on 127.0.0.1: the server's end a `Connection` over `wrap(ws)`."""
    ready: asyncio.Queue[Connection] = asyncio.Queue()

    async def handle(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        conn = Connection(wrap(ws), on_request=_answer, name="srv",  # type: ignore[arg-type]
                          request_timeout=60)
        await ready.put(conn)
        await conn.run()
        return ws

    async with websocket_to(handle) as client:
        server = await asyncio.wait_for(ready.get(), WAIT)
        yield Ends(server, client)


@pytest.fixture
async def ends() -> AsyncIterator[Ends]:
    async with _serve() as both:
        yield both


async def test_an_unsendable_frame_fails_alone_and_the_next_goes_out(
    ends: Ends, caplog: pytest.LogCaptureFixture
) -> None:
    failures: list[Exception] = []
    dropped: list[str] = []
    queue = SendQueue(ends.server.ws, 64 * 1024, "q", failures.append,
                      lambda text, _exc: dropped.append(text))
    with caplog.at_level(logging.WARNING, logger="bridge.bcn"):
        await queue.put(UNSENDABLE)
        await queue.put('{"n":2}')
        assert await ends.received() == {"n": 2}
    assert failures == []
    assert dropped == [UNSENDABLE]
    assert queue.dropped == 1
    [logged] = [r for r in caplog.records if "could not be sent" in r.getMessage()]
    assert "surrogates not allowed" in logged.getMessage()  # logged once, saying why
    await queue.put('{"n":3}')  # the writer lives on
    assert await ends.received() == {"n": 3}


async def test_a_connection_goes_on_after_an_unsendable_frame(ends: Ends) -> None:
    """What the hub's writer to each bot did in issue 31: it stopped, the socket stayed
    open, and the bot heard nothing more until its heartbeat noticed."""
    server = ends.server
    await server._queue.put(UNSENDABLE)
    await server.send_event("next", {"text": "the next message"})
    frame = await ends.received()
    assert frame["event"] == "next"
    assert not server.closed
    await ends.client.send_str(json.dumps({"type": "req", "id": "r1", "method": "echo",
                                           "params": {"value": "still here"}}))
    assert await ends.received() == {"type": "res", "id": "r1", "ok": True,
                                     "payload": {"echo": "still here"}}


async def test_a_request_whose_frame_cannot_be_sent_fails_at_once(ends: Ends) -> None:
    """The message fails, not the connection: its caller hears so, without a timeout."""
    server = ends.server
    future = asyncio.get_running_loop().create_future()
    server._pending["r-bad"] = future
    await server._queue.put('{"type":"req","id":"r-bad","method":"m","params":{"t":"\ud800"}}')
    with pytest.raises(BcnError, match="could not be sent"):
        await asyncio.wait_for(future, WAIT)
    assert "r-bad" not in server._pending
    assert not server.closed


async def test_an_answer_that_cannot_be_sent_is_answered_with_an_error(ends: Ends) -> None:
    """The peer waiting for it hears that it failed, instead of waiting for its timeout."""
    await ends.server._queue.put('{"type":"res","id":"r7","ok":true,"payload":{"t":"\udc00"}}')
    answer = await ends.received()
    assert answer["id"] == "r7"
    assert answer["ok"] is False
    assert answer["error"]["code"] == "internal_error"


async def test_a_writer_that_fails_otherwise_closes_the_connection(ends: Ends) -> None:
    """Any other failure of a write ends the writer, and the socket with it (1011): the peer
    sees it and reconnects, instead of a writer gone behind a socket that stays open.
    (aiohttp refuses a frame that is not text with TypeError: a bug's worth of surprise.)"""
    await ends.server._queue.put(b"not text")  # type: ignore[arg-type]
    message = await ends.client.receive(timeout=WAIT)
    assert message.type is aiohttp.WSMsgType.CLOSE
    assert message.data == aiohttp.WSCloseCode.INTERNAL_ERROR
    assert ends.server.closed


class _FailingTransport:
    """The server's real socket, whose transport fails once as a frame is written: what
    aiohttp raises when the peer reset the connection (`ConnectionResetError`), or when it is
    written to at the wrong moment (`RuntimeError`). Reading and the close frame go through
    the real socket, so the peer can be told."""

    def __init__(self, ws: web.WebSocketResponse, failure: Exception) -> None:
        self._ws = ws
        self._failure: Exception | None = failure

    @property
    def closed(self) -> bool:
        return bool(self._ws.closed)

    async def send_str(self, data: str, compress: int | None = None) -> None:
        if self._failure is not None and "fail here" in data:
            failure, self._failure = self._failure, None
            raise failure
        await self._ws.send_str(data)

    async def receive(self, timeout: float | None = None) -> aiohttp.WSMessage:
        return await self._ws.receive(timeout)

    async def close(self, *, code: int = 1000, message: bytes = b"") -> bool:
        return bool(await self._ws.close(code=code, message=message))


@pytest.mark.parametrize("failure", [
    pytest.param(ConnectionResetError("Cannot write to closing transport"), id="reset"),
    pytest.param(RuntimeError("transport failed"), id="runtime"),
])
async def test_a_transport_failure_closes_the_socket_with_1011(
    failure: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    """Not a frame that cannot be encoded but the socket failing under the writer: nothing
    queued after it can go, so the connection ends and says so (1011), and the peer
    reconnects at once. Before, the writer ended while the socket stayed open: the peer
    talked on to a connection that never answered until its heartbeat noticed."""
    caplog.set_level(logging.DEBUG, logger="bridge.bcn")
    async with _serve(lambda ws: _FailingTransport(ws, failure)) as ends:
        server = ends.server
        await server.send_event("first", {"text": "goes out"})
        assert (await ends.received())["event"] == "first"
        waiting = asyncio.create_task(server.request("ask", {"text": "fail here"}))
        message = await ends.client.receive(timeout=WAIT)
        assert message.type is aiohttp.WSMsgType.CLOSE
        assert message.data == aiohttp.WSCloseCode.INTERNAL_ERROR
        assert message.extra == "send failed"
        with pytest.raises(ConnectionClosed):  # its caller hears at once, not in 60 s
            await asyncio.wait_for(waiting, WAIT)
        await asyncio.wait_for(server.wait_closed(), WAIT)
        assert server.closed
        with pytest.raises(ConnectionClosed):
            await server.send_event("later", {})
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # no traceback
