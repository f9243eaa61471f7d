"""Serving a fake platform's aiohttp app on 127.0.0.1 at a free port."""

from __future__ import annotations

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
