"""The page and its assets over HTTP: where they are mounted, and the headers that guard them."""

from __future__ import annotations

import aiohttp
import pytest
from webchat_clients import open_client

from adapters.webchat import WebchatAccountConfig, WebchatAdapter
from bridge.web.server import WebServer


async def test_page_is_served_with_a_strict_policy(webchat, http) -> None:
    async with http.get(f"{webchat.server.url}/webchat/main/") as response:
        assert response.status == 200
        assert response.content_type == "text/html"
        policy = response.headers["Content-Security-Policy"]
        page = await response.text()
    assert "default-src 'self'" in policy
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert '<script src="/webchat/main/static/webchat.js" defer></script>' in page
    assert 'href="/webchat/main/static/webchat.css"' in page
    assert 'data-base="/webchat/main/"' in page
    assert "<title>bcn-bridge webchat</title>" in page
    assert "http://" not in page and "https://" not in page  # nothing from elsewhere


async def test_the_main_account_also_owns_the_root(webchat, http) -> None:
    async with http.get(f"{webchat.server.url}/") as response:
        assert response.status == 200
        assert 'data-base="/webchat/main/"' in await response.text()
    async with http.get(f"{webchat.server.url}/webchat/main", allow_redirects=False) as response:
        assert response.status == 302
        assert response.headers["Location"] == "/webchat/main/"


@pytest.mark.parametrize(("name", "content_type"), [
    ("webchat.js", "text/javascript"), ("webchat.css", "text/css")
])
async def test_static_files(webchat, http, name, content_type) -> None:
    async with http.get(f"{webchat.server.url}/webchat/main/static/{name}") as response:
        assert response.status == 200
        assert response.content_type == content_type
        assert "Content-Security-Policy" in response.headers
        assert len(await response.text()) > 1000


@pytest.mark.parametrize("name", ["index.html", "../config.py", "nope.js", "%2e%2e%2fconfig.py"])
async def test_only_the_pages_assets_are_served(webchat, http, name) -> None:
    async with http.get(f"{webchat.server.url}/webchat/main/static/{name}") as response:
        assert response.status == 404


async def test_titles_are_escaped(start_webchat, http) -> None:
    chat = await start_webchat(title='<script>alert("x")</script> & co')
    async with http.get(f"{chat.server.url}/") as response:
        page = await response.text()
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co" in page


async def test_several_accounts_live_side_by_side(http) -> None:
    server = WebServer("127.0.0.1:0")

    async def sink(inbound) -> None:
        return None

    main = WebchatAdapter("main", WebchatAccountConfig(title="Main"), sink, web=server)
    team = WebchatAdapter("team", WebchatAccountConfig(title="Team"), sink, web=server)
    for adapter in (main, team):
        await adapter.start()
    await server.start()
    try:
        async with http.get(f"{server.url}/webchat/team/") as response:
            assert "<title>Team</title>" in await response.text()
        async with http.get(f"{server.url}/") as response:
            assert "<title>Main</title>" in await response.text()
        async with http.ws_connect(f"{server.url}{team.ws_path}") as ws:
            assert (await ws.receive_json(timeout=5))["title"] == "Team"
    finally:
        for adapter in (main, team):
            await adapter.stop()
        await server.stop()


async def test_root_can_be_left_to_someone_else(start_webchat, http) -> None:
    chat = await start_webchat(serve_at_root=False)
    async with http.get(f"{chat.server.url}/") as response:
        assert response.status == 404


async def test_sockets_are_refused_while_the_adapter_is_stopped(webchat, http) -> None:
    await webchat.adapter.stop()
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await http.ws_connect(webchat.ws_url)
    assert refused.value.status == 503


def test_the_adapter_needs_the_web_server() -> None:
    async def sink(inbound) -> None:
        return None

    with pytest.raises(ValueError, match="web server"):
        WebchatAdapter("main", WebchatAccountConfig(), sink)


def test_capabilities_suit_a_browser() -> None:
    capabilities = WebchatAdapter.capabilities
    assert capabilities.dialect == "webchat"
    assert capabilities.can_edit and capabilities.custom_sender and capabilities.request_panel
    assert capabilities.max_length == 16000
    assert capabilities.min_edit_interval < 1


def test_account_config_is_checked() -> None:
    with pytest.raises(ValueError, match="room"):
        WebchatAccountConfig(rooms=["ok", "not ok"])
    with pytest.raises(ValueError):
        WebchatAccountConfig(unknown_key=1)
    assert WebchatAccountConfig(rooms=["lobby"]).allows_room("lobby")
    assert not WebchatAccountConfig(rooms=["lobby"]).allows_room("kitchen")
    assert WebchatAccountConfig().allows_room("kitchen")


async def test_stopping_the_web_server_closes_open_pages(start_webchat, http) -> None:
    chat = await start_webchat()
    client = await http.ws_connect(chat.ws_url)
    assert (await client.receive_json(timeout=5))["type"] == "hello"
    await chat.server.stop()
    closing = await client.receive(timeout=5)
    assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    assert client.close_code == 1001


async def test_history_can_be_switched_off(start_webchat, http) -> None:
    chat = await start_webchat(history=0)
    ada = await open_client(http, chat.ws_url)
    await ada.join()
    await ada.say("gone with the wind")
    await ada.expect("ack")
    late = await open_client(http, chat.ws_url)
    assert (await late.join())["history"] == []
