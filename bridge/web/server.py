"""The bridge's one HTTP server.

Every part of the bridge that speaks HTTP (the webchat, Telegram webhooks, Slack events, a
dashboard) mounts its routes on this one aiohttp application before `start()`, so a deployment
opens exactly one port and one place sets request limits, logging and health checks.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from bridge import __version__
from bridge.listen import parse_listen
from bridge.web.bad_input import bad_input_middleware

log = logging.getLogger(__name__)

DEFAULT_CLIENT_MAX_SIZE = 1024 * 1024
"""Largest request body accepted (1 MiB): chat payloads are small; uploads go elsewhere."""


class DebugAccessLogger(AbstractAccessLogger):
    """Access lines at debug level: a busy webchat must not flood the bridge's info log."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        self.logger.debug(
            "%s %s %s -> %s in %.1f ms",
            request.remote,
            request.method,
            request.path,
            response.status,
            time * 1000,
        )

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.DEBUG)


def check_route_path(value: str | None) -> str | None:
    """A route an adapter asks to mount (a webhook path from its config), or ValueError.

    aiohttp reads `{name}` in a path as a variable, so a configured path must not hold
    braces; it must start with "/" and have no spaces.
    """
    if value is None:
        return value
    if not value.startswith("/"):
        raise ValueError('expected a path starting with "/"')
    if any(char in value for char in "{} \t\n?#"):
        raise ValueError("a path may not contain braces, spaces, '?' or '#'")
    return value


async def _healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok", "version": __version__})


class WebServer:
    """One aiohttp application on one listening socket.

    Add routes through `app` / `router` before `await start()`; `port` and `url` tell where it
    really listens (useful with port 0 in tests). Things that hold connections open (WebSockets)
    should close them from `app.on_shutdown`, which `stop()` runs before it waits for handlers.
    """

    def __init__(
        self,
        listen: str = "127.0.0.1:8080",
        *,
        client_max_size: int = DEFAULT_CLIENT_MAX_SIZE,
        shutdown_timeout: float = 5.0,
    ) -> None:
        self.host, self._requested_port = parse_listen(listen)
        self.app = web.Application(client_max_size=client_max_size,
                                   middlewares=[bad_input_middleware("web")])
        self.app.router.add_get("/healthz", _healthz)
        self._shutdown_timeout = shutdown_timeout
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    @property
    def router(self) -> web.UrlDispatcher:
        return self.app.router

    def add_routes(self, routes: list[web.AbstractRouteDef] | web.RouteTableDef) -> None:
        self.app.add_routes(routes)

    @property
    def running(self) -> bool:
        return self._runner is not None

    @property
    def port(self) -> int:
        """The port really listened on; only known after `start()`."""
        if self._port is None:
            raise RuntimeError("WebServer.port is known only after start()")
        return self._port

    @property
    def url(self) -> str:
        """Base URL for reaching the server from this machine, without a trailing slash."""
        host = self.host
        if host in ("0.0.0.0", ""):
            host = "127.0.0.1"
        elif host == "::":
            host = "::1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("WebServer is already started")
        runner = web.AppRunner(
            self.app,
            access_log_class=DebugAccessLogger,
            access_log=logging.getLogger("bridge.web.access"),
            shutdown_timeout=self._shutdown_timeout,
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._requested_port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._port = _bound_port(runner.addresses, self._requested_port)
        log.info("web server listening on %s", self.url)

    async def stop(self) -> None:
        """Close the socket, run shutdown hooks, wait for handlers; safe to call twice."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()


def _bound_port(addresses: list[Any], requested: int) -> int:
    for address in addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    return requested
