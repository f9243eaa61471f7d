"""A page's side of the webchat WebSocket, for tests: connect, join, read frames by type."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import aiohttp

FRAME_WAIT = 5.0
"""Generous upper bound for a frame to arrive; tests never assert how long it took."""

_ids = itertools.count(1)

OPEN_REQUEST: dict[str, Any] = {
    "request_id": "ada-1",
    "type": "REQUEST",
    "from": "Ada",
    "to": "Rules",
    "status": "open",
    "depth": {"current": 1, "max": 5},
    "task": "what is 2+2",
    "deadline": "2030-01-01T00:30:00+00:00",
}
"""A request-panel item as the core sends it."""


class ChatClient:
    """One browser tab, speaking JSON frames over a real socket."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, client_id: str | None = None) -> None:
        self.ws = ws
        self.client_id = client_id
        """The signed id the page keeps: the server's (from `hello`), or one presented."""
        self.hello: dict[str, Any] = {}

    @property
    def user_id(self) -> str:
        """The sender id bots see: the issued id without its signature."""
        assert self.client_id is not None
        return self.client_id.partition(".")[0]

    async def send(self, frame: dict[str, Any]) -> None:
        await self.ws.send_str(json.dumps(frame))

    async def next_frame(self) -> dict[str, Any]:
        message = await self.ws.receive(timeout=FRAME_WAIT)
        assert message.type is aiohttp.WSMsgType.TEXT, f"expected a text frame, got {message}"
        return json.loads(message.data)

    async def expect(self, frame_type: str) -> dict[str, Any]:
        """The next frame, which must be of `frame_type`."""
        frame = await self.next_frame()
        assert frame["type"] == frame_type, f"expected {frame_type!r}, got {frame}"
        return frame

    async def join(self, room: str = "lobby", name: str = "Ada") -> dict[str, Any]:
        await self.send({"type": "join", "room": room, "name": name, "client_id": self.client_id})
        joined = await self.expect("joined")
        self.client_id = joined["client_id"]  # what a page stores for its next visit
        return joined

    async def say(self, text: str, client_message_id: str | None = None) -> str:
        client_message_id = client_message_id or f"m-{next(_ids)}"
        await self.send({"type": "message", "client_message_id": client_message_id, "text": text})
        return client_message_id

    async def final_from(self, sender: str, wait: float = 10.0) -> dict[str, Any]:
        """The next finished reply of `sender` this page is shown (a new message, or a
        preview edited into its final), skipping everything else."""
        async with asyncio.timeout(wait):
            while True:
                frame = await self.next_frame()
                message = frame.get("message") or {}
                if (frame["type"] in ("message", "update") and message.get("kind") == "final"
                        and message["sender"]["name"] == sender):
                    return message

    async def assert_quiet(self) -> None:
        """Nothing more arrives: a ping round trip comes back with no frame before the pong."""
        await self.send({"type": "ping"})
        assert (await self.next_frame())["type"] == "pong"


async def open_client(
    session: aiohttp.ClientSession, url: str, client_id: str | None = None
) -> ChatClient:
    """A tab; `client_id` is an id a server issued to an earlier tab (a reload), if any."""
    ws = await session.ws_connect(url)
    client = ChatClient(ws)
    client.hello = await client.expect("hello")
    client.client_id = client_id or client.hello["client_id"]
    return client


async def drain_until(client: ChatClient, frame_type: str) -> dict[str, Any]:
    """Skip frames until one of `frame_type` arrives (for flows with interleaved frames)."""
    while True:
        frame = await client.next_frame()
        if frame["type"] == frame_type:
            return frame


async def wait_for(queue: asyncio.Queue[Any]) -> Any:
    return await asyncio.wait_for(queue.get(), FRAME_WAIT)
