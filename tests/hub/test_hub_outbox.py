"""The per-binding outbox without sockets: links are stand-ins with a `send_request`."""

from __future__ import annotations

import asyncio
from typing import Any

from bridge.bcn import ConnectionClosed
from bridge.hub.deliveries import BindingOutbox, Delivery, OutboxLimits


class StandInLink:
    """Looks live, but its socket may refuse every write (a half-dead TCP connection)."""

    def __init__(self, *, broken: bool = False) -> None:
        self.broken = broken
        self.closed = False
        self.sent: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def send_request(
        self, method: str, params: dict[str, Any], *, timeout: float
    ) -> asyncio.Future[dict[str, Any]]:
        if self.broken:
            raise ConnectionClosed("send failed: connection reset")
        await self.sent.put(params)
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        answer.set_result({})
        return answer


async def test_output_whose_send_fails_goes_to_another_live_link_at_once() -> None:
    broken, healthy = StandInLink(broken=True), StandInLink()
    outbox = BindingOutbox("bnd_1", lambda _binding: [broken, healthy],  # type: ignore[list-item]
                           OutboxLimits())
    try:
        outbox.put(Delivery("evt-1", {"event_id": "evt-1"}, 0.0))
        delivered = await asyncio.wait_for(healthy.sent.get(), 2)
        assert delivered["event_id"] == "evt-1"
        async with asyncio.timeout(2):  # the answer is handled: acked, nothing left waiting
            while outbox.unacked:
                await asyncio.sleep(0.01)
    finally:
        await outbox.close()
