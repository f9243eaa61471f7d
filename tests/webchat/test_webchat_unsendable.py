"""A frame a page's socket cannot send fails alone; the page stays and gets the next one.

Over a real WebSocket on 127.0.0.1 (issue 31). The room's frames are encoded by
`bridge.fastjson.dumps`, which never writes a lone surrogate any more, so the page's writer
is handed such a frame directly: the test is about the writer, which must survive whatever
one frame does. Before, the page was cut off for it, reloaded, and met it again.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from adapters.webchat.writes import SURE_TO_FIT, EndOfTurn, PageWriter
from tests.fakes.local_server import websocket_to

WAIT = 5.0
"""Upper bound for a frame to arrive; nothing here asserts how long it took."""

UNSENDABLE = '{"type":"message","message":{"text":"a\ud800b"}}'


@pytest.fixture
async def page() -> AsyncIterator[tuple[PageWriter, aiohttp.ClientWebSocketResponse]]:
    """The server's writer to one page, and the page's end of the socket."""
    writers: asyncio.Queue[PageWriter] = asyncio.Queue()
    done = asyncio.Event()

    async def handle(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await writers.put(PageWriter(ws, request.transport, EndOfTurn(), name="the page"))
        await done.wait()
        return ws

    async with websocket_to(handle) as client:
        yield await asyncio.wait_for(writers.get(), WAIT), client
        done.set()


async def _received(client: aiohttp.ClientWebSocketResponse) -> Any:
    message = await client.receive(timeout=WAIT)
    assert message.type is aiohttp.WSMsgType.TEXT, message
    return json.loads(message.data)


@pytest.mark.parametrize("pad", [
    pytest.param(lambda frame: frame, id="written-at-once"),
    # Too large to be sure to fit the socket buffer: written by the draining task.
    pytest.param(lambda frame: frame.replace("a", "a" * SURE_TO_FIT), id="drained"),
])
async def test_an_unsendable_frame_is_dropped_and_the_page_gets_the_next(
    page: tuple[PageWriter, aiohttp.ClientWebSocketResponse], pad: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    writer, client = page
    with caplog.at_level(logging.WARNING, logger="adapters.webchat.writes"):
        writer.send(pad(UNSENDABLE))
        writer.send('{"type":"pong"}')
        assert await _received(client) == {"type": "pong"}
    [logged] = [r for r in caplog.records if "could not be sent" in r.getMessage()]
    assert "surrogates not allowed" in logged.getMessage()
    assert not client.closed
    writer.send('{"type":"pong","n":2}')  # and the page stays
    assert await _received(client) == {"type": "pong", "n": 2}
