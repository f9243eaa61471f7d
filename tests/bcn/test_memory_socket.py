"""The in-process socket pair under the embedded hub's channel link (`bridge.bcn.memory`):
order, backpressure and close behave as a WebSocket's do, and a `Connection` on it works."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from bridge.bcn import Connection, ConnectionClosed
from bridge.bcn.memory import memory_pair


async def test_frames_arrive_in_order() -> None:
    one, other = memory_pair()
    for n in range(5):
        await one.send_str(f"frame {n}")
    assert [(await other.receive()).data for _ in range(5)] == [f"frame {n}" for n in range(5)]


async def test_a_peer_that_does_not_read_holds_the_sender_up() -> None:
    one, other = memory_pair(limit=10)
    await one.send_str("x" * 10)
    blocked = asyncio.create_task(one.send_str("y"))
    await asyncio.sleep(0.01)
    assert not blocked.done()  # nothing grows while the peer reads nothing
    assert (await other.receive()).data == "x" * 10
    await asyncio.wait_for(blocked, 1)
    assert (await other.receive()).data == "y"


async def test_close_reaches_the_peer_after_what_was_sent_and_ends_both() -> None:
    one, other = memory_pair()
    await one.send_str("last words")
    assert await one.close(code=4001, message=b"replaced")
    assert not await one.close()  # twice is harmless
    assert (await other.receive()).data == "last words"
    closing = await other.receive()
    assert (closing.type, closing.data, closing.extra) == (aiohttp.WSMsgType.CLOSE, 4001,
                                                          "replaced")
    assert other.closed and one.closed
    assert (await other.receive()).type is aiohttp.WSMsgType.CLOSED
    assert (await one.receive()).type is aiohttp.WSMsgType.CLOSED
    for end in (one, other):
        with pytest.raises(ConnectionResetError):
            await end.send_str("too late")


async def test_close_wakes_a_blocked_sender_and_a_waiting_reader() -> None:
    one, other = memory_pair(limit=1)
    await one.send_str("x")
    blocked = asyncio.create_task(one.send_str("y"))
    reading = asyncio.create_task(one.receive())
    await asyncio.sleep(0.01)
    await other.close()
    with pytest.raises(ConnectionResetError):
        await asyncio.wait_for(blocked, 1)
    assert (await asyncio.wait_for(reading, 1)).type is aiohttp.WSMsgType.CLOSE


async def test_connection_requests_and_close_over_the_pair() -> None:
    one, other = memory_pair()

    async def answer(req: object) -> dict[str, object]:
        return {"echo": getattr(req, "params", {})}

    client, server = Connection(one, name="client"), Connection(other, on_request=answer)
    readers = [asyncio.create_task(client.run()), asyncio.create_task(server.run())]
    assert await client.request("ping", {"n": 1}) == {"echo": {"n": 1}}
    await server.close(4002, "expired")
    await asyncio.wait_for(asyncio.gather(*readers), 1)
    assert client.close_code == 4002 and client.close_reason == "expired"
    with pytest.raises(ConnectionClosed):
        await client.request("ping")


async def test_try_send_takes_a_frame_only_when_it_needs_no_wait() -> None:
    one, other = memory_pair(limit=10)
    assert one.try_send("x" * 10)
    assert not one.try_send("y")  # the peer holds its limit unread: a send would wait
    assert (await other.receive()).data == "x" * 10
    assert one.try_send("y")
    await one.close()
    assert not one.try_send("z")  # closed: nothing sent, the caller's own send raises
    assert [(await other.receive()).data for _ in range(1)] == ["y"]


async def test_the_send_queue_skips_its_writer_while_the_peer_keeps_up_and_keeps_order_when_not(
) -> None:
    one, other = memory_pair(limit=12)
    client = Connection(one, name="client")
    await client.send_event("a", {})
    assert client._queue._writer is None  # handed over at once: no task, no turn of the loop
    assert other._inbox and client.queued == 0
    for name in ("b", "c", "d"):  # the peer reads nothing: these wait in the queue
        await client.send_event(name, {}, wait=False)
    assert client.queued > 0
    received = []
    while len(received) < 4:
        received.append(json.loads((await other.receive()).data)["event"])
        await asyncio.sleep(0)
    assert received == ["a", "b", "c", "d"]
    await client.close()
