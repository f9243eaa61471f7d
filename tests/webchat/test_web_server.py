"""The bridge's one HTTP server: listening, health, limits, and stopping cleanly."""

from __future__ import annotations

import logging

import aiohttp
import pytest
from aiohttp import web

from bridge import __version__
from bridge.listen import parse_listen
from bridge.web.server import WebServer, check_route_path


def test_a_configured_route_path_is_absolute_and_has_no_aiohttp_variables() -> None:
    assert check_route_path("/slack/main/events") == "/slack/main/events"
    assert check_route_path(None) is None
    for bad in ("slack/events", "/hooks/{account}", "/a b", "/x?y=1"):
        with pytest.raises(ValueError):
            check_route_path(bad)


@pytest.mark.parametrize(
    ("listen", "expected"),
    [
        ("127.0.0.1:8080", ("127.0.0.1", 8080)),
        (":9000", ("0.0.0.0", 9000)),
        ("[::1]:0", ("::1", 0)),
        ("localhost:1", ("localhost", 1)),
    ],
)
def test_parse_listen(listen: str, expected: tuple[str, int]) -> None:
    assert parse_listen(listen) == expected


@pytest.mark.parametrize("listen", ["8080", "host:", "host:http", "host:70000", ""])
def test_parse_listen_refuses_nonsense(listen: str) -> None:
    with pytest.raises(ValueError, match="listen"):
        parse_listen(listen)


@pytest.fixture
async def server():
    server = WebServer("127.0.0.1:0", client_max_size=1024)

    async def echo(request: web.Request) -> web.Response:
        return web.Response(text=str(len(await request.read())))

    server.router.add_post("/echo", echo)
    await server.start()
    yield server
    await server.stop()


async def test_healthz(server: WebServer, http: aiohttp.ClientSession) -> None:
    assert server.port > 0
    assert server.url == f"http://127.0.0.1:{server.port}"
    async with http.get(f"{server.url}/healthz") as response:
        assert response.status == 200
        assert await response.json() == {"status": "ok", "version": __version__}


async def test_routes_added_before_start_are_served(server, http) -> None:
    async with http.post(f"{server.url}/echo", data=b"x" * 100) as response:
        assert await response.text() == "100"


async def test_oversize_bodies_are_refused(server, http) -> None:
    async with http.post(f"{server.url}/echo", data=b"x" * 5000) as response:
        assert response.status == 413


async def test_access_lines_are_debug_level(server, http, caplog) -> None:
    with caplog.at_level(logging.DEBUG, logger="bridge.web.access"):
        async with http.get(f"{server.url}/healthz") as response:
            await response.read()
    lines = [r for r in caplog.records if r.name == "bridge.web.access"]
    assert lines and all(r.levelno == logging.DEBUG for r in lines)
    assert "/healthz" in lines[0].getMessage()


async def test_port_is_unknown_before_start() -> None:
    with pytest.raises(RuntimeError, match="start"):
        _ = WebServer("127.0.0.1:0").port


async def test_stop_is_idempotent_and_frees_the_port(http) -> None:
    server = WebServer("127.0.0.1:0")
    await server.start()
    url = server.url
    await server.stop()
    await server.stop()
    assert not server.running
    with pytest.raises(aiohttp.ClientConnectionError):
        async with http.get(f"{url}/healthz"):
            pass


async def test_starting_twice_is_an_error() -> None:
    server = WebServer("127.0.0.1:0")
    await server.start()
    try:
        with pytest.raises(RuntimeError, match="already"):
            await server.start()
    finally:
        await server.stop()


async def test_a_taken_port_fails_loudly() -> None:
    first = WebServer("127.0.0.1:0")
    await first.start()
    try:
        second = WebServer(f"127.0.0.1:{first.port}")
        with pytest.raises(OSError):
            await second.start()
        assert not second.running
    finally:
        await first.stop()
