"""A WebSocket that shows a test every JSON text frame passing through it.

Shared by the scripted BCN of the SDK tests (which records what bots send), the hub tests'
bots (which catch answers that name no request) and the wire tests (which read the ids a
connection writes): each passes the callbacks it needs and the socket forwards the rest.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import aiohttp

Seen = Callable[[dict[str, Any]], None]


class TappedSocket:
    """Forwards to `ws`; `incoming` / `outgoing` see each text frame, decoded."""

    def __init__(self, ws: Any, *, incoming: Seen | None = None,
                 outgoing: Seen | None = None) -> None:
        self._ws = ws
        self._incoming = incoming
        self._outgoing = outgoing

    @property
    def closed(self) -> bool:
        return bool(self._ws.closed)

    async def send_str(self, data: str, compress: int | None = None) -> None:
        if self._outgoing is not None:
            self._outgoing(json.loads(data))
        await self._ws.send_str(data)

    async def receive(self, timeout: float | None = None) -> aiohttp.WSMessage:
        msg = await self._ws.receive(timeout)
        if msg.type == aiohttp.WSMsgType.TEXT and self._incoming is not None:
            try:
                frame = json.loads(msg.data)
            except ValueError:
                return msg
            if isinstance(frame, dict):
                self._incoming(frame)
        return msg

    async def close(self, *, code: int = 1000, message: bytes = b"") -> bool:
        return bool(await self._ws.close(code=code, message=message))
