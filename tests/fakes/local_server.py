"""Serving a fake platform's aiohttp app on 127.0.0.1 at a free port."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import aiohttp
from aiohttp import web


async def serve_locally(app: web.Application) -> tuple[web.AppRunner, str]:
    """Start `app`; returns its runner (to `cleanup()`) and its root URL.

    No access log: the fake is the platform, and the platform's logs are not the bridge's.
    """
    runner = web.AppRunner(app, shutdown_timeout=0.5, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}"


@asynccontextmanager
async def websocket_to(
    handle: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> AsyncIterator[aiohttp.ClientWebSocketResponse]:
    """A client WebSocket connected to `handle` (served at `/ws` on a free port); the
    client is closed and the server cleaned up when the block ends."""
    app = web.Application()
    app.router.add_get("/ws", handle)
    runner, root = await serve_locally(app)
    try:
        async with aiohttp.ClientSession() as http:
            client = await http.ws_connect(f"{root}/ws")
            try:
                yield client
            finally:
                await client.close()
    finally:
        await runner.cleanup()
