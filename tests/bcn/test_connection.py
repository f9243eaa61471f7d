"""The shared `Connection` over a real WebSocket pair on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bridge.bcn import BcnError, Connection, ConnectionClosed, Event, Request
from tests.fakes.local_server import websocket_to
from tests.support.socket_tap import TappedSocket


@dataclass
class Pair:
    """A server-side and a client-side Connection joined by one socket."""

    server: Connection
    client: Connection
    client_ws: aiohttp.ClientWebSocketResponse
    server_events: asyncio.Queue[Event] = field(default_factory=asyncio.Queue)


async def slow_echo(req: Request) -> dict[str, Any]:
    """Answers after `delay` seconds, so later requests can overtake earlier ones."""
    if req.method == "fail":
        raise BcnError("not_found", "nothing here", retryable=True, retry_after_ms=5)
    if req.method == "crash":
        raise RuntimeError("handler bug")
    await asyncio.sleep(float(req.params.get("delay", 0)))
    return {"echo": req.params.get("value")}


@pytest.fixture
async def pair() -> AsyncIterator[Pair]:
    ready: asyncio.Queue[Connection] = asyncio.Queue()
    events: asyncio.Queue[Event] = asyncio.Queue()

    async def on_event(event: Event) -> None:
        await events.put(event)

    async def handle(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        conn = Connection(ws, on_request=slow_echo, on_event=on_event, name="srv",
                          request_timeout=2)
        await ready.put(conn)
        await conn.run()
        return ws

    async with websocket_to(handle) as ws:
        client = Connection(ws, on_request=slow_echo, name="cli", request_timeout=2)
        task = asyncio.create_task(client.run())
        server = await asyncio.wait_for(ready.get(), 3)
        yield Pair(server, client, ws, events)
        await client.close()
        await asyncio.gather(task, return_exceptions=True)


async def test_pipelined_requests_both_ways_answer_out_of_order(pair: Pair) -> None:
    finished: list[str] = []

    async def ask(conn: Connection, value: str, delay: float) -> None:
        answer = await conn.request("echo", {"value": value, "delay": delay})
        assert answer == {"echo": value}
        finished.append(value)

    await asyncio.gather(
        ask(pair.client, "slow-c", 0.1), ask(pair.client, "fast-c", 0),
        ask(pair.server, "slow-s", 0.1), ask(pair.server, "fast-s", 0),
    )
    assert set(finished[:2]) == {"fast-c", "fast-s"}
    assert set(finished[2:]) == {"slow-c", "slow-s"}


async def test_error_answers_become_bcn_errors(pair: Pair) -> None:
    with pytest.raises(BcnError) as caught:
        await pair.client.request("fail")
    error = caught.value
    assert (error.code, error.message, error.retryable, error.retry_after_ms) == (
        "not_found", "nothing here", True, 5)
    with pytest.raises(BcnError) as caught:
        await pair.client.request("crash")
    assert caught.value.code == "internal_error"


async def test_request_timeout(pair: Pair) -> None:
    with pytest.raises(TimeoutError):
        await pair.client.request("echo", {"delay": 1}, timeout=0.05)
    assert pair.client._pending == {}


async def test_send_request_returns_future_without_waiting(pair: Pair) -> None:
    answer = await pair.client.send_request("echo", {"value": 1, "delay": 0.05})
    assert not answer.done()
    assert await answer == {"echo": 1}
    late = await pair.client.send_request("echo", {"delay": 1}, timeout=0.05)
    with pytest.raises(TimeoutError):
        await late


async def test_malformed_frames_are_answered_and_connection_stays(pair: Pair) -> None:
    # Bypass the client's Connection: write raw frames and read answers from the server.
    await pair.client_ws.send_str("{broken")
    await pair.client_ws.send_str(json.dumps({"type": "req", "id": "7", "params": {}}))
    await pair.client_ws.send_str(json.dumps({"type": "req", "id": "8", "method": "x",
                                              "params": []}))
    await pair.client_ws.send_str(json.dumps({"type": "nope", "id": 9}))
    answer = await pair.client.request("echo", {"value": "still up"})
    assert answer == {"echo": "still up"}


async def test_deeply_nested_frame_is_malformed_and_connection_stays(pair: Pair) -> None:
    from bridge.bcn.frames import MalformedFrame, decode_frame

    hostile = "[" * 100_000 + "]" * 100_000
    with pytest.raises(MalformedFrame, match="nested too deeply"):
        decode_frame(hostile)
    await pair.client_ws.send_str(hostile)
    await pair.client_ws.send_str('{"type": "event", "event": "x", "payload": ' + "[" * 50_000)
    answer = await pair.client.request("echo", {"value": "still up"})
    assert answer == {"echo": "still up"}


async def test_malformed_frame_answer_shape() -> None:
    from bridge.bcn.frames import MalformedFrame, decode_frame, encode_error

    with pytest.raises(MalformedFrame) as caught:
        decode_frame(json.dumps({"type": "req", "id": "8", "method": "x", "params": []}))
    frame = json.loads(encode_error(caught.value.req_id, caught.value))
    # No `retry_after_ms: null`: strict clients drop an error whose field is not an integer.
    assert frame == {"type": "res", "id": "8", "ok": False,
                     "error": {"code": "invalid_request", "message": "'params' must be an object",
                               "retryable": False}}
    with pytest.raises(MalformedFrame) as caught:
        decode_frame("[1, 2]")
    assert caught.value.req_id is None
    for typeless in ({"id": "5", "method": "x", "params": {}}, {"type": "nope", "id": 9}):
        with pytest.raises(MalformedFrame) as caught:
            decode_frame(json.dumps(typeless))
        answer = json.loads(encode_error(caught.value.req_id, caught.value))
        assert answer["id"] is None and answer["error"]["code"] == "invalid_request"


async def test_events_carry_own_seq_and_arrive_in_order(pair: Pair) -> None:
    seqs = [await pair.client.send_event("tick", {"n": n}) for n in range(3)]
    got = [await asyncio.wait_for(pair.server_events.get(), 3) for _ in range(3)]
    assert [e.payload["n"] for e in got] == [0, 1, 2]
    assert [e.seq for e in got] == seqs == [1, 2, 3]


async def test_pending_requests_fail_when_the_peer_closes(pair: Pair) -> None:
    waiting = asyncio.ensure_future(pair.client.request("echo", {"delay": 5}))
    await asyncio.sleep(0.05)
    await pair.server.close()
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(waiting, 3)
    with pytest.raises(ConnectionClosed):
        await pair.client.request("echo", {})


def test_retry_after_is_sent_only_as_an_integer() -> None:
    """Regression (issue 15): `retry_after_ms: null` made strict clients drop every error."""
    from bridge.bcn.frames import encode_error

    def wire(error: BcnError) -> dict[str, object]:
        return json.loads(encode_error("1", error))["error"]

    assert "retry_after_ms" not in wire(BcnError("unavailable", "busy", retryable=True))
    assert wire(BcnError("unavailable", "busy", retryable=True, retry_after_ms=250)) == {
        "code": "unavailable", "message": "busy", "retryable": True, "retry_after_ms": 250}
    for odd in (True, -1, 1.5, "10"):
        assert "retry_after_ms" not in wire(BcnError("x", "y", retry_after_ms=odd))  # type: ignore[arg-type]
    assert wire(BcnError("x", "   "))["message"] == "x"  # never a blank message either


async def test_request_ids_never_repeat_across_connections_or_restarts(pair: Pair) -> None:
    """Regression (issue 15): ids restarted at 1 on every connection (and process), so a
    peer that remembers ids took a reconnect's first request for a duplicate and dropped it.
    """
    import sys

    url = str(pair.client_ws._response.url)  # type: ignore[attr-defined]
    sent: list[str] = []
    async with aiohttp.ClientSession() as http:
        for value in (1, 2):  # two connections in turn, under the same name
            tapped = TappedSocket(await http.ws_connect(url), outgoing=lambda frame: sent.append(
                frame["id"]) if frame.get("type") == "req" else None)
            conn = Connection(tapped, name="hub-bot")
            reader = asyncio.create_task(conn.run())
            assert await conn.request("echo", {"value": value}, timeout=3) == {"echo": value}
            await conn.close()
            await asyncio.gather(reader, return_exceptions=True)
    assert len(set(sent)) == 2 and all(i.startswith("hub-bot-") for i in sent)
    code = "from bridge.bcn.connection import new_request_id as n; print(n('hub-bot'))"
    restarted = set()
    for _ in range(2):  # fresh processes (what a restarted hub numbers with): fresh ids
        child = await asyncio.create_subprocess_exec(sys.executable, "-c", code,
                                                     stdout=asyncio.subprocess.PIPE)
        out, _ = await child.communicate()
        restarted.add(out.decode().strip())
    assert len(restarted) == 2 and not restarted & set(sent)
