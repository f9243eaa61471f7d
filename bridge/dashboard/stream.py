"""The dashboard's live feed: Server-Sent Events, one shared producer, bounded per viewer.

One task builds the overview once a second — only while someone watches, and it is sent
only when it differs from the last one sent — and one task reads the relay's events, so ten
open dashboards cost what one does. Each viewer has a bounded queue: a viewer whose
connection cannot keep up loses intermediate updates (it is sent the newest overview when it
catches up), never the bridge's time.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)

PING_EVERY = 15.0
VIEWER_QUEUE = 64
MAX_VIEWERS = 50
"""Open streams at once; more answer 503 (each is a socket and a queue)."""


@dataclass(slots=True, eq=False)
class Viewer:
    queue: asyncio.Queue[tuple[str, str]] = field(
        default_factory=lambda: asyncio.Queue(VIEWER_QUEUE)
    )
    behind: bool = False
    """Updates were dropped: send the latest overview once there is room."""

    def offer(self, event: str, data: str) -> None:
        if self.queue.full():
            self.behind = True
            return
        self.queue.put_nowait((event, data))


def encode(event: str, data: str) -> bytes:
    """One SSE message; `data` is one line of JSON (json.dumps never writes a newline)."""
    return f"event: {event}\ndata: {data}\n\n".encode()


class Feed:
    def __init__(self, overview: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        self.overview = overview
        self.viewers: set[Viewer] = set()
        self._last: str | None = None
        self._last_key: str | None = None
        self._closing = asyncio.Event()

    @staticmethod
    def _key(body: dict[str, Any]) -> str:
        """What decides "changed": everything but the clock."""
        return json.dumps({k: v for k, v in body.items() if k != "now"}, sort_keys=True,
                          default=str)

    async def refresh(self) -> None:
        """Build the overview (if anyone watches) and send it where it is new."""
        if not self.viewers:
            self._last_key = None
            return
        body = await self.overview()
        key = self._key(body)
        fresh = key != self._last_key
        self._last_key, self._last = key, json.dumps(body, default=str)
        for viewer in list(self.viewers):
            if fresh or viewer.behind:
                viewer.behind = False
                viewer.offer("overview", self._last)

    def conversation(self, data: dict[str, Any]) -> None:
        line = json.dumps(data, default=str)
        for viewer in list(self.viewers):
            viewer.offer("conversation", line)

    def close(self) -> None:
        """Ends every stream (the web server is stopping)."""
        self._closing.set()

    async def serve(self, request: web.Request) -> web.StreamResponse:
        if len(self.viewers) >= MAX_VIEWERS:
            return web.json_response({"error": "too many open dashboard streams"}, status=503)
        response = web.StreamResponse(headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-store",
            "X-Accel-Buffering": "no",  # nginx: pass events on as they come
        })
        await response.prepare(request)
        viewer = Viewer()
        self.viewers.add(viewer)
        try:
            first = await self.overview()
            await response.write(encode("overview", json.dumps(first, default=str)))
            closing = asyncio.ensure_future(self._closing.wait())
            try:
                while not self._closing.is_set():
                    getter = asyncio.ensure_future(viewer.queue.get())
                    done, _ = await asyncio.wait({getter, closing}, timeout=PING_EVERY,
                                                 return_when=asyncio.FIRST_COMPLETED)
                    if getter in done:
                        event, data = getter.result()
                        await response.write(encode(event, data))
                    else:
                        getter.cancel()
                        if not self._closing.is_set():
                            await response.write(b": ping\n\n")
            finally:
                closing.cancel()
        except ConnectionResetError:
            pass  # the viewer left
        finally:
            self.viewers.discard(viewer)
        return response
