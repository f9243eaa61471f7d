"""Webhook mode: the fake Bot API POSTs updates to a route on the bridge's WebServer."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator

import aiohttp
import pytest
from telegram_support import GROUP, TOKEN, MakeAdapter, Received, account_config

from adapters.telegram import TelegramAdapter
from bridge.web.server import WebServer
from tests.fakes.telegram import FakeTelegram, Webhook, user

SECRET = "s3cret-Webhook_token"
ALICE = user("Alice", user_id=501)


def free_port() -> int:
    """The public URL must be known before the server starts (routes are fixed by then)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def public_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture
async def web(public_url: str) -> AsyncIterator[WebServer]:
    server = WebServer(public_url.removeprefix("http://"))
    yield server
    await server.stop()


async def start_webhook(
    make_adapter: MakeAdapter, web: WebServer, public_url: str
) -> TelegramAdapter:
    return await make_adapter(
        web=web, mode="webhook", public_url=public_url, secret_token=SECRET
    )


async def test_webhook_is_registered_with_its_secret_and_no_token_in_the_url(
    fake: FakeTelegram, make_adapter: MakeAdapter, web: WebServer, public_url: str
) -> None:
    await start_webhook(make_adapter, web, public_url)

    hook = fake.webhooks[TOKEN]
    assert hook.url == f"{web.url}/telegram/main"
    assert hook.secret_token == SECRET
    assert TOKEN not in hook.url and TOKEN.partition(":")[2] not in hook.url
    assert not fake.calls_to("getUpdates")


async def test_update_with_the_right_secret_is_relayed(
    fake: FakeTelegram,
    make_adapter: MakeAdapter,
    web: WebServer,
    public_url: str,
    received: Received,
) -> None:
    await start_webhook(make_adapter, web, public_url)
    message = fake.message(GROUP, ALICE, "via webhook")

    status = await fake.deliver_webhook(TOKEN, {"message": message})
    inbound = await received.next()

    assert status == 200
    assert (inbound.text, inbound.sender.name) == ("via webhook", "Alice")


@pytest.mark.parametrize(("secret", "status"), [(None, 401), ("wrong-secret", 403)])
async def test_missing_or_wrong_secret_is_refused_and_logged_without_token(
    fake: FakeTelegram,
    make_adapter: MakeAdapter,
    web: WebServer,
    public_url: str,
    received: Received,
    caplog: pytest.LogCaptureFixture,
    secret: str | None,
    status: int,
) -> None:
    caplog.set_level(logging.DEBUG)
    await start_webhook(make_adapter, web, public_url)
    message = fake.message(GROUP, ALICE, "forged")

    answer = await fake.deliver_webhook(TOKEN, {"message": message}, secret=secret)

    assert answer == status
    assert received.empty()
    refusals = [r for r in caplog.records if "webhook refused" in r.getMessage()]
    assert len(refusals) == 1 and refusals[0].levelno == logging.WARNING
    assert TOKEN.partition(":")[2] not in caplog.text
    assert SECRET not in caplog.text


async def test_secret_that_is_not_utf8_is_refused_like_a_wrong_one(
    make_adapter: MakeAdapter, web: WebServer, public_url: str, received: Received
) -> None:
    await start_webhook(make_adapter, web, public_url)
    reader, writer = await asyncio.open_connection("127.0.0.1", web.port)
    writer.write(
        b"POST /telegram/main HTTP/1.1\r\nHost: bridge\r\nConnection: close\r\n"
        b"X-Telegram-Bot-Api-Secret-Token: \xff\xfe\r\nContent-Length: 2\r\n\r\n{}"
    )
    await writer.drain()
    status_line = (await reader.read()).split(b"\r\n", 1)[0]
    writer.close()

    assert status_line == b"HTTP/1.1 403 Forbidden"
    assert received.empty()


async def test_malformed_body_is_a_bad_request(
    make_adapter: MakeAdapter, web: WebServer, public_url: str, received: Received
) -> None:
    await start_webhook(make_adapter, web, public_url)
    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}

    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{web.url}/telegram/main", data=b"{nope", headers=headers) as response,
    ):
        assert response.status == 400
    assert received.empty()


@pytest.mark.parametrize(
    "update",
    [
        {"update_id": 1, "message": {"message_id": 1}},
        {"update_id": 2, "message": "not a message"},
        {"update_id": 3, "message": {"message_id": 1, "date": "later", "chat": {}}},
    ],
)
async def test_update_that_is_no_telegram_update_is_a_bad_request(
    fake: FakeTelegram,
    make_adapter: MakeAdapter,
    web: WebServer,
    public_url: str,
    received: Received,
    update: dict[str, object],
) -> None:
    await start_webhook(make_adapter, web, public_url)

    assert await fake.deliver_webhook(TOKEN, update) == 400
    assert await fake.deliver_webhook(TOKEN, {"message": fake.message(GROUP, ALICE, "ok")}) == 200
    assert (await received.next()).text == "ok"
    assert [item.text for item in received.items] == ["ok"]


async def test_updates_before_start_ask_telegram_to_retry(
    fake: FakeTelegram, web: WebServer, public_url: str
) -> None:
    config = account_config(fake, mode="webhook", public_url=public_url, secret_token=SECRET)
    TelegramAdapter("main", config, Received(), web=web)  # mounted, not started
    await web.start()
    fake.webhooks[TOKEN] = Webhook(f"{public_url}/telegram/main", SECRET)

    status = await fake.deliver_webhook(TOKEN, {"message": fake.message(GROUP, ALICE, "early")})

    assert status == 503


def test_webhook_mode_needs_the_web_server(fake: FakeTelegram) -> None:
    config = account_config(
        fake, mode="webhook", public_url="https://bridge.example", secret_token=SECRET
    )

    with pytest.raises(ValueError, match="no web server"):
        TelegramAdapter("main", config, Received())
