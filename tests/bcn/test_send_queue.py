"""The connection's bounds, over a real socket whose reader a test can stop.

Nothing here measures time: a peer that stops reading is made with `pause_reading()` on its
transport (the kernel's buffers fill, then aiohttp's, then ours), and every assertion is
about counts, bounds and order.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bridge.bcn import Connection, ConnectionClosed, Request
from bridge.bcn.send_queue import SendQueueFull
from tests.hub.hub_clients import until

LIMIT = 64 * 1024
FRAME = "x" * 16_000


@dataclass
class Ends:
    """The server side (bounded, under test; its read loop is the test's to run) and the
    raw client socket that reads it."""

    server: Connection
    client: aiohttp.ClientWebSocketResponse
    reader: asyncio.Task[None] | None = None
    """The server's read loop, when the test asked for it (`run=True`)."""

    def pause(self) -> None:
        self.client._writer.transport.pause_reading()  # type: ignore[union-attr]

    def resume(self) -> None:
        self.client._writer.transport.resume_reading()  # type: ignore[union-attr]


ServerOptions = dict[str, Any]


@pytest.fixture
async def ends_factory() -> AsyncIterator[Callable[..., Any]]:
    runners: list[web.AppRunner] = []
    sessions: list[aiohttp.ClientSession] = []
    made: list[Ends] = []

    async def make(on_request: Callable[[Request], Any] | None = None, *, run: bool = True,
                   **options: Any) -> Ends:
        ready: asyncio.Queue[Connection] = asyncio.Queue()

        async def handle(request: web.Request) -> web.WebSocketResponse:
            ws = web.WebSocketResponse()
            await ws.prepare(request)
            conn = Connection(ws, on_request=on_request, name="srv", request_timeout=30,
                              transport=request.transport, **options)
            await ready.put(conn)
            await conn.wait_closed()  # the read loop is the fixture's (`run`), not the handler's
            return ws

        app = web.Application()
        app.router.add_get("/ws", handle)
        runner = web.AppRunner(app)
        await runner.setup()
        runners.append(runner)
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        http = aiohttp.ClientSession()
        sessions.append(http)
        client = await http.ws_connect(f"http://127.0.0.1:{port}/ws", max_msg_size=0)
        server = await asyncio.wait_for(ready.get(), 3)
        ends = Ends(server, client, asyncio.create_task(server.run()) if run else None)
        made.append(ends)
        return ends

    yield make
    for ends in made:
        await ends.server.close()
        if ends.reader is not None:
            await asyncio.gather(ends.reader, return_exceptions=True)
    for http in sessions:
        await http.close()
    for runner in runners:
        await runner.cleanup()


async def read_frames(ends: Ends, count: int) -> list[dict[str, Any]]:
    frames = []
    while len(frames) < count:
        msg = await asyncio.wait_for(ends.client.receive(), 5)
        assert msg.type == aiohttp.WSMsgType.TEXT, msg
        frames.append(json.loads(msg.data))
    return frames


async def fill(conn: Connection) -> int:
    """Queue events without waiting until the queue refuses one; how many were queued.

    The socket and the kernel's buffers take their share first; between two attempts the
    writer gets a turn, so this ends once they are full and the queue is at its bound.
    """
    sent = 0
    while True:
        try:
            await conn.send_event("fill", {"n": sent, "pad": FRAME}, wait=False)
        except SendQueueFull:
            return sent
        sent += 1
        assert conn.queued <= conn.send_queue_limit
        await asyncio.sleep(0)


async def test_a_peer_that_stops_reading_fills_the_queue_to_its_bound_and_no_further(
    ends_factory: Callable[..., Any],
) -> None:
    ends: Ends = await ends_factory(send_queue_chars=LIMIT)
    ends.pause()
    sent = await fill(ends.server)

    assert ends.server.queued <= LIMIT and ends.server.peak_queued <= LIMIT
    assert ends.server.queued + len(FRAME) > LIMIT  # full: the next frame does not fit
    # A sender that may wait is held up, not queued beyond the bound...
    waiting = [asyncio.create_task(ends.server.send_event("late", {"n": n, "pad": FRAME}))
               for n in range(3)]
    await asyncio.sleep(0)
    assert not any(task.done() for task in waiting)
    assert ends.server.peak_queued <= LIMIT
    # ... and one that may not, fails at once while they wait (it must not overtake them).
    with pytest.raises(SendQueueFull):
        await ends.server.send_event("small", {}, wait=False)

    ends.resume()
    frames = await read_frames(ends, sent + 3)
    await asyncio.gather(*waiting)
    assert [f["payload"]["n"] for f in frames] == [*range(sent), 0, 1, 2]
    assert [f["event"] for f in frames[sent:]] == ["late"] * 3
    assert ends.server.peak_queued <= LIMIT


async def test_a_frame_larger_than_the_bound_still_goes_when_nothing_waits(
    ends_factory: Callable[..., Any],
) -> None:
    ends: Ends = await ends_factory(send_queue_chars=1024)
    await ends.server.send_event("big", {"pad": "y" * 10_000}, wait=False)
    [frame] = await read_frames(ends, 1)
    assert frame["event"] == "big"


async def test_at_max_handlers_the_read_loop_stops_until_one_is_done(
    ends_factory: Callable[..., Any],
) -> None:
    release = asyncio.Event()
    running: list[str] = []

    async def slow(req: Request) -> dict[str, Any]:
        running.append(req.id or "")
        await release.wait()
        return {"ok": req.params["n"]}

    ends: Ends = await ends_factory(on_request=slow, max_handlers=2)
    for n in range(5):
        await ends.client.send_str(json.dumps(
            {"type": "req", "id": f"r{n}", "method": "slow", "params": {"n": n}}))
    await until(lambda: len(running) == 2)
    # Three more are on the socket, but none of them is handled while two run.
    assert len(ends.server._handlers) == 2
    release.set()
    answers = await read_frames(ends, 5)
    assert sorted(a["id"] for a in answers) == [f"r{n}" for n in range(5)]
    assert len(running) == 5


async def test_closing_without_flush_drops_the_queue_fails_requests_and_cuts_the_peer(
    ends_factory: Callable[..., Any],
) -> None:
    ends: Ends = await ends_factory(send_queue_chars=LIMIT)
    ends.pause()
    answer = await ends.server.send_request("ping", {}, wait=False)
    await fill(ends.server)
    assert ends.server.unanswered == 1

    await ends.server.close(4003, "too slow", flush=False, timeout=0.2)

    assert ends.server.closed
    with pytest.raises(ConnectionClosed):
        await answer
    await until(lambda: ends.server.queued == 0)  # the frame being written fails with the cut
    with pytest.raises(ConnectionClosed):
        await ends.server.send_event("after", {})
    assert ends.reader is not None
    await asyncio.wait_for(ends.reader, 5)  # the transport was cut: the read loop ended
    ends.resume()
    while (await asyncio.wait_for(ends.client.receive(), 5)).type not in (
        aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR
    ):
        pass  # what had reached the kernel's buffers, then the end


async def test_an_orderly_close_sends_what_is_queued_first(
    ends_factory: Callable[..., Any],
) -> None:
    ends: Ends = await ends_factory(send_queue_chars=LIMIT)
    for n in range(20):
        await ends.server.send_event("tick", {"n": n})
    closing = asyncio.create_task(ends.server.close(1000, "bye"))
    frames = await read_frames(ends, 20)
    assert [f["payload"]["n"] for f in frames] == list(range(20))
    msg = await asyncio.wait_for(ends.client.receive(), 5)
    assert (msg.type, msg.data, msg.extra) == (aiohttp.WSMsgType.CLOSE, 1000, "bye")
    await ends.client.close()
    await closing


async def test_the_peers_close_code_and_reason_are_kept(ends_factory: Callable[..., Any]) -> None:
    ends: Ends = await ends_factory(run=False)
    client = Connection(ends.client, name="cli")
    reader = asyncio.create_task(client.run())
    await ends.server.close(4003, "too slow: 5 chat.inject shed in a row")
    await asyncio.wait_for(reader, 5)
    assert (client.close_code, client.close_reason) == (4003,
                                                        "too slow: 5 chat.inject shed in a row")


async def test_events_are_unaffected_by_the_queue(ends_factory: Callable[..., Any]) -> None:
    """A quick check that ordinary traffic goes straight through, in order."""
    ends: Ends = await ends_factory()
    seqs = [await ends.server.send_event("e", {"n": n}) for n in range(100)]
    seqs.append(ends.server.send_event_nowait("e", {"n": 100}))
    frames = await read_frames(ends, 101)
    assert [f["seq"] for f in frames] == seqs
    assert ends.server.queued == 0
