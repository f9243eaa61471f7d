"""`bcn-bridge doctor` when a platform answers something unexpected (issue 31 item 7).

Each platform's probes run through doctor's own runner (`check_accounts`) against its fake
server, which answers one call with a shape nobody planned for: `true` where an object
belongs, a list, an object without its fields, a string. Whatever it is, the account ends
in one ✗ line that names it — never a traceback, and the other accounts are still checked.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bridge.config.schema import BridgeConfig, load_config
from bridge.core.adapter import Diagnosis
from bridge.doctor import check_accounts
from tests.fakes.discord import BOT_TOKEN as DISCORD_TOKEN
from tests.fakes.discord import FakeDiscord
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, FakeSlack
from tests.fakes.telegram import FakeTelegram
from tests.support.bridge_process import write_config

TG_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ"
ODD_RESULTS = [True, False, None, 7, "ok", [], [{"url": ""}], {}, {"url": 5}]
"""What might stand where an object belongs."""


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    fake = FakeTelegram()
    fake.add_bot(TG_TOKEN, "BridgeBot")
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    fake = FakeSlack()
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
async def discord() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        yield fake


def config(accounts: dict[str, Any], bindings: list[dict[str, str]] | None = None
           ) -> BridgeConfig:  # fmt: skip
    """The deployment as `bcn-bridge doctor` would load it from its file."""
    with tempfile.TemporaryDirectory() as folder:
        return load_config(write_config(Path(folder) / "bridge.yaml", {
            "bcn": {"url": "ws://127.0.0.1:9/ws/channel", "token": "link-token-0042"},
            "web": {"enabled": False},
            "accounts": accounts,
            "bindings": bindings or [],
        }))


def telegram_account(fake: FakeTelegram) -> dict[str, Any]:
    return {"main": {"token": TG_TOKEN, "api_base_url": fake.url, "connect_timeout": 2,
                     "read_timeout": 2}}


def slack_account(fake: FakeSlack) -> dict[str, Any]:
    return {"main": {"bot_token": BOT_TOKEN, "app_token": APP_TOKEN,
                     "api_base_url": fake.api_url, "request_timeout": 5}}


def discord_account(fake: FakeDiscord) -> dict[str, Any]:
    return {"main": {"token": DISCORD_TOKEN, "api_base_url": fake.api_url,
                     "gateway_url": fake.gateway_url, "webhook_timeout": 5}}


def about(found: list[Diagnosis], channel: str) -> list[Diagnosis]:
    return [item for item in found if item.what.startswith(channel)]


def one_failure_naming(found: list[Diagnosis], channel: str) -> Diagnosis:
    [failed] = [item for item in found if item.status == "fail"]
    assert failed.what.startswith(f"{channel}:"), failed
    return failed


@pytest.mark.parametrize("result", ODD_RESULTS, ids=repr)
async def test_an_odd_webhook_info_is_one_failed_line(
    telegram: FakeTelegram, result: Any
) -> None:
    """The reported case: getWebhookInfo answering `{"ok": true, "result": true}`."""
    telegram.answer_oddly("getWebhookInfo", {"ok": True, "result": result})

    found = await check_accounts(config({"telegram": telegram_account(telegram)}))

    failed = one_failure_naming(found, "telegram:main")
    assert "getWebhookInfo" in failed.what and "api_base_url" in failed.fix
    assert about(found, "telegram:main: logged in")[0].status == "ok"  # the rest still shown


@pytest.fixture
async def web_page() -> AsyncIterator[Any]:
    """Something that is not the Bot API at an api_base_url (a web server, a proxy's error
    page): it answers every path with `status` and an HTML page."""
    answer = {"status": 404}

    async def page(_request: web.Request) -> web.Response:
        html = f"<html><body><h1>{answer['status']}</h1>{'filler ' * 200}</body></html>"
        return web.Response(status=answer["status"], text=html, content_type="text/html")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield answer, f"http://127.0.0.1:{port}"
    await runner.cleanup()


@pytest.mark.parametrize("status", [404, 501])
async def test_a_web_page_at_the_api_address_is_not_a_bad_token(
    web_page: Any, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    """A wrong api_base_url (its 404) was reported as a rejected token, and a 501's HTML was
    dumped into the line and the log."""
    answer, url = web_page
    answer["status"] = status
    found = await check_accounts(config({"telegram": {"main": {
        "token": TG_TOKEN, "api_base_url": url, "connect_timeout": 2, "read_timeout": 2}}}))
    failed = one_failure_naming(found, "telegram:main")
    assert f"answered HTTP {status} with a page that is not the Bot API's" in failed.what
    assert "api_base_url" in failed.fix and "rejected" not in failed.what
    assert "filler" not in failed.what and "<html" not in failed.what
    assert "filler" not in caplog.text  # nothing logged the page either


@pytest.mark.parametrize("body", [{"ok": True, "result": True}, {"ok": True, "result": []},
                                  {"ok": True}, [1, 2], "getMe"], ids=repr)
async def test_an_odd_get_me_is_one_failed_line(telegram: FakeTelegram, body: Any) -> None:
    telegram.answer_oddly("getMe", body)

    found = await check_accounts(config({"telegram": telegram_account(telegram)}))

    [only] = about(found, "telegram:main")
    assert only.status == "fail" and "telegram:main" in only.what
    assert TG_TOKEN.partition(":")[2] not in only.what + only.fix


@pytest.mark.parametrize("method", ["auth.test", "apps.connections.open"])
@pytest.mark.parametrize("body", [[1, 2], "ok", True, None], ids=repr)
async def test_odd_slack_answers_are_one_failed_line(
    slack: FakeSlack, method: str, body: Any
) -> None:
    slack.answer_oddly(method, body)

    found = await check_accounts(config({"slack": slack_account(slack)}))

    failures = [item for item in found if item.status == "fail"]
    assert failures, found  # an answer it cannot read is not a pass
    assert all(item.what.startswith("slack:main") for item in failures), failures
    assert BOT_TOKEN not in repr(found) and APP_TOKEN not in repr(found)


NOT_OBJECTS = [True, [], ["x"], "text", None]
DISCORD_ODD = [(route, body) for route in ("get_me", "application_info", "get_channel")
               for body in NOT_OBJECTS] + [("application_info", {"flags": "all of them"})]


@pytest.mark.parametrize(("route", "body"), DISCORD_ODD, ids=repr)
async def test_odd_discord_answers_are_one_failed_line(
    discord: FakeDiscord, route: str, body: Any
) -> None:
    guild = discord.add_guild("Team")
    general = discord.add_channel(guild, "general")
    discord.answer_oddly(route, body)

    found = await check_accounts(config(
        {"discord": discord_account(discord)},
        [{"channel": "discord:main", "chat": str(general), "group": "team"}],
    ))

    one_failure_naming(found, "discord:main")
    assert all(item.what.startswith("discord:main") for item in found), found
    assert DISCORD_TOKEN not in repr(found)


async def test_one_odd_account_leaves_the_others_checked(
    telegram: FakeTelegram, slack: FakeSlack
) -> None:
    telegram.answer_oddly("getMe", {"ok": True, "result": True})

    found = await check_accounts(config({"telegram": telegram_account(telegram),
                                         "slack": slack_account(slack)}))

    assert about(found, "telegram:main")[0].status == "fail"
    assert about(found, "slack:main: logged in")[0].status == "ok"
