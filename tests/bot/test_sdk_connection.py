"""The SDK's connection lifecycle against a scripted BCN over a real socket."""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from pathlib import Path

import pytest
from bot_fake_bcn import FakeBcn

from bridge.bcn import BcnError, ErrorCode
from bridge.bcn.bot import Bot, IncomingMessage, Run
from bridge.retry import Backoff


async def answer_ok(message: IncomingMessage, run: Run) -> str:
    return "ok"


async def test_new_bot_registers_and_saves_token_privately(fake_bcn, make_bot, tmp_path: Path):
    bot = make_bot(fake_bcn.url, name="Echo", on_message=answer_ok)
    async with bot:
        assert bot.connected
        assert bot.bot_uuid == "bot-1"
    params = fake_bcn.connect_params[0]
    assert params == {"protocol_version": 3, "name": "Echo"}
    token_path = tmp_path / "bot.token"
    assert token_path.read_text().strip() == bot.token
    assert stat.S_IMODE(token_path.stat().st_mode) == 0o600


async def test_restart_reuses_the_persisted_token(fake_bcn, make_bot):
    first = make_bot(fake_bcn.url, on_message=answer_ok)
    async with first:
        token = first.token
    second = make_bot(fake_bcn.url, on_message=answer_ok)
    async with second:
        assert second.token == token
        assert second.bot_uuid == "bot-1"
    assert fake_bcn.connect_params[1]["token"] == token


async def test_env_is_applied_and_values_never_logged(fake_bcn, make_bot, monkeypatch, caplog):
    monkeypatch.delenv("BCN_TEST_FLAVOUR", raising=False)
    monkeypatch.delenv("BCN_BOT_TOKEN", raising=False)
    fake_bcn.env = {"BCN_TEST_FLAVOUR": "vanilla"}
    caplog.set_level(logging.DEBUG)
    async with make_bot(fake_bcn.url, on_message=answer_ok) as bot:
        assert os.environ["BCN_TEST_FLAVOUR"] == "vanilla"
        assert os.environ["BCN_BOT_TOKEN"] == bot.token
        assert bot.token and bot.token not in caplog.text
        assert bot.token not in repr(bot)
    monkeypatch.delenv("BCN_BOT_TOKEN", raising=False)


async def test_heartbeat_sends_bot_status(fake_bcn, make_bot):
    async with make_bot(fake_bcn.url, heartbeat_interval=0.02, on_message=answer_ok):
        await fake_bcn.wait_until(lambda: len(fake_bcn.requests("bot.status")) >= 2)


async def test_reconnects_with_token_after_server_drops(fake_bcn, make_bot):
    async with make_bot(fake_bcn.url, on_message=answer_ok) as bot:
        await fake_bcn.drop()
        await fake_bcn.wait_until(lambda: bot.connect_count == 2)
        await bot.wait_connected(timeout=5)
        assert fake_bcn.connect_params[1]["token"] == bot.token
        reply = await fake_bcn.request("chat.history", {"session_key": "s"})
        assert reply["messages"] == []


async def test_keeps_retrying_until_bcn_comes_up(make_bot, caplog):
    fake = FakeBcn()
    url = await fake.start()
    port = int(url.split(":")[2].split("/")[0])
    await fake.stop()  # the port is now closed: connecting fails until a server is back
    bot = make_bot(url, on_message=answer_ok)
    with pytest.raises(TimeoutError):
        await bot.start(timeout=0.2)
    assert "reconnecting in" in caplog.text
    assert not bot.connected

    bot = make_bot(url, on_message=answer_ok)
    starting = asyncio.create_task(bot.start(timeout=10))
    await fake.wait_until(lambda: caplog.text.count("reconnecting in") >= 4)
    revived = FakeBcn()
    await revived.start(port)
    try:
        await starting
        assert bot.connected
        await bot.stop()
    finally:
        await revived.stop()


async def test_deprecation_is_logged_once_with_sunset(fake_bcn, make_bot, caplog):
    fake_bcn.deprecation = {"message": "Protocol v1 will be removed.", "sunset_date": "2026-06-01"}
    caplog.set_level(logging.WARNING, logger="bridge.bcn.bot")
    async with make_bot(fake_bcn.url, protocol_version=1, on_message=answer_ok) as bot:
        await fake_bcn.drop()
        await fake_bcn.wait_until(lambda: bot.connect_count == 2)
    notices = [r for r in caplog.records if "deprecated" in r.getMessage()]
    assert len(notices) == 1
    assert "2026-06-01" in notices[0].getMessage()
    assert fake_bcn.connect_params[0]["protocol_version"] == 1


async def test_unsupported_protocol_version_stops_the_bot(make_bot):
    refusal = BcnError(ErrorCode.UNSUPPORTED_PROTOCOL_VERSION, "v9 is not served here")
    fake = FakeBcn(refuse_with=refusal)
    await fake.start()
    try:
        bot = make_bot(fake.url, protocol_version=9, on_message=answer_ok)
        with pytest.raises(BcnError) as caught:
            await bot.start(timeout=5)
        assert caught.value.code == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION
        with pytest.raises(BcnError):
            await make_bot(fake.url, protocol_version=9, on_message=answer_ok).run()
    finally:
        await fake.stop()


async def test_rejected_token_registers_anew(fake_bcn, make_bot, tmp_path: Path):
    (tmp_path / "bot.token").write_text("tok-the-hub-forgot\n")
    # A minute of backoff would time start() out: re-registering must not wait for it.
    bot = make_bot(fake_bcn.url, on_message=answer_ok, backoff=Backoff(initial=60))
    await bot.start(timeout=5)
    await bot.stop()
    assert bot.token != "tok-the-hub-forgot"
    assert fake_bcn.connect_params[0]["token"] == "tok-the-hub-forgot"
    assert "token" not in fake_bcn.connect_params[1]
    assert (tmp_path / "bot.token").read_text().strip() == bot.token


def test_constructor_rejects_bad_settings():
    with pytest.raises(ValueError, match="ws://"):
        Bot("http://127.0.0.1/ws/bot")
    with pytest.raises(ValueError, match="protocol_version"):
        Bot("ws://127.0.0.1/ws/bot", protocol_version=0)
    with pytest.raises(ValueError, match="heartbeat"):
        Bot("ws://127.0.0.1/ws/bot", heartbeat_interval=0)


async def test_start_without_handler_is_a_clear_error():
    with pytest.raises(ValueError, match="handler"):
        await Bot("ws://127.0.0.1:1/ws/bot").start()
