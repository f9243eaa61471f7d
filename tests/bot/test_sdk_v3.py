"""The SDK on a v3 BCN: run events as the BCN server parses them, idempotent deliveries.

Against a scripted BCN that negotiates `unified_run_events`, so every frame the SDK writes
can be checked against the server's rules (common envelope, per-run seq equal to the
frame's seq, content per state).
"""

from __future__ import annotations

import logging

import pytest
from bot_fake_bcn import FakeBcn, send_params

from bridge.bcn import BcnError, ErrorCode
from bridge.bcn.bot import IncomingMessage, Run, route_to
from bridge.bcn.run_events import parse_v3

SESSION = "grp-1:channel_webchat_0123abcd"


@pytest.fixture
async def v3_bcn():
    fake = FakeBcn(run_events=True)
    await fake.start()
    yield fake
    await fake.stop()


async def test_v3_run_events_follow_the_servers_envelope(v3_bcn, make_bot):
    async def answer(message: IncomingMessage, run: Run) -> None:
        await run.delta("Hel")
        await run.tool_call_start("t1", "search", {"q": "x"})
        await run.tool_call_end("t1", "search", {"hits": 0})
        await run.delta("lo")
        await run.final("Hello", routing=route_to("DBA"), usage={"input": 1, "output": 2})

    async with make_bot(v3_bcn.url, on_message=answer) as bot:
        assert bot.run_events and bot.capabilities["canonical_session_id"] is True
        ack = await v3_bcn.request("chat.send", send_params("hi", idempotency_key="run-abc"))
        assert ack == {"run_id": "run-abc"}  # the delivery's key is the run id
        await v3_bcn.wait_terminal("run-abc")
    frames = v3_bcn.event_frames("run-abc")
    parsed = [parse_v3(f["event"], f["payload"], f["seq"]) for f in frames]  # all accepted
    assert [f["event"] for f in frames] == ["chat", "agent", "agent", "chat", "chat"]
    assert [e.seq for e in parsed] == [1, 2, 3, 4, 5]
    assert all(e.session_id == SESSION for e in parsed)
    assert [(e.state, e.text) for e in parsed] == [
        ("delta", "Hel"), ("activity", ""), ("activity", ""), ("delta", "lo"),
        ("final", "Hello")]
    final = frames[-1]["payload"]
    assert final["routing"]["responders"] == [{"type": "name", "value": "DBA"}]
    assert final["usage"] == {"input": 1, "output": 2} and final["stopReason"] == "complete"
    assert frames[2]["payload"]["isError"] is False and "bcs_group_id" not in final


async def test_v3_errors_and_aborts(v3_bcn, make_bot):
    async def fail(message: IncomingMessage, run: Run) -> None:
        if message.text == "slow":
            await run.delta("thinking")
            import asyncio
            await asyncio.sleep(10)
        raise ValueError("no idea")

    async with make_bot(v3_bcn.url, on_message=fail):
        failed = (await v3_bcn.request("chat.send", send_params("?")))["run_id"]
        error = await v3_bcn.wait_terminal(failed)
        assert error["errorMessage"].startswith("The bot failed to answer (ValueError")
        slow = (await v3_bcn.request("chat.send", send_params("slow")))["run_id"]
        await v3_bcn.wait_until(lambda: len(v3_bcn.events(slow)) == 1)
        answer = await v3_bcn.request("chat.abort", {"session_key": SESSION, "run_id": slow})
        assert answer == {"aborted": True, "aborted_run_ids": [slow]}
    frames = v3_bcn.event_frames(slow)
    assert [(f["payload"]["state"], f["seq"]) for f in frames] == [("delta", 1), ("aborted", 2)]


async def test_a_repeated_delivery_is_answered_once(v3_bcn, make_bot):
    calls: list[str] = []

    async def answer(message: IncomingMessage, run: Run) -> str:
        calls.append(message.text)
        return "once"

    async with make_bot(v3_bcn.url, on_message=answer):
        params = send_params("hi", idempotency_key="run-key-1")
        first = await v3_bcn.request("chat.send", params)
        await v3_bcn.wait_terminal("run-key-1")
        again = await v3_bcn.request("chat.send", params)
    assert first == again == {"run_id": "run-key-1"}
    assert calls == ["hi"]


async def test_v3_deliveries_need_the_canonical_session(v3_bcn, make_bot):
    async with make_bot(v3_bcn.url, on_message=lambda m, r: None):  # type: ignore[arg-type]
        params = send_params("hi")
        del params["bcs_session_id"]
        with pytest.raises(BcnError) as caught:
            await v3_bcn.request("chat.send", params)
        assert caught.value.code == "invalid_request"
        assert "bcs_session_id" in caught.value.message


async def test_v3_without_the_capability_keeps_chat_event(fake_bcn, make_bot):
    """A BCN that answers v3 without `capabilities` predates unified run events."""
    async def answer(message: IncomingMessage, run: Run) -> str:
        return "legacy"

    async with make_bot(fake_bcn.url, on_message=answer) as bot:
        assert bot.negotiated_version == 3 and not bot.run_events
        run_id = (await fake_bcn.request("chat.send", send_params("hi")))["run_id"]
        final = await fake_bcn.wait_terminal(run_id)
    assert final["message"]["content"][0]["text"] == "legacy"
    assert [f["event"] for f in fake_bcn.frames if f.get("type") == "event"] == ["chat.event"]


async def test_already_connected_is_retried_with_the_same_token(make_bot, caplog):
    fake = FakeBcn(refuse_with=BcnError(ErrorCode.ALREADY_CONNECTED, "a live connection"),
                   run_events=True)
    fake.refusals_left = 2
    await fake.start()
    caplog.set_level(logging.WARNING, logger="bridge.bcn.bot")
    try:
        bot = make_bot(fake.url, token="tok-known", on_message=lambda m, r: None)
        fake.known_tokens["tok-known"] = "bot-9"
        await bot.start(timeout=5)
        assert bot.bot_uuid == "bot-9" and bot.token == "tok-known"
        await bot.stop()
    finally:
        await fake.stop()
    assert [p.get("token") for p in fake.connect_params] == ["tok-known"] * 3
    assert "already connected elsewhere" in caplog.text


async def test_heartbeat_says_busy_while_answering(fake_bcn, make_bot):
    import asyncio

    release = asyncio.Event()

    async def answer(message: IncomingMessage, run: Run) -> str:
        await release.wait()
        return "done"

    async with make_bot(fake_bcn.url, heartbeat_interval=0.02, on_message=answer):
        await fake_bcn.wait_until(lambda: len(fake_bcn.requests("bot.status")) >= 1)
        assert fake_bcn.requests("bot.status")[0]["params"]["status"] == "idle"
        run_id = (await fake_bcn.request("chat.send", send_params("hi")))["run_id"]
        await fake_bcn.wait_until(lambda: any(r["params"]["status"] == "busy"
                                              for r in fake_bcn.requests("bot.status")))
        release.set()
        await fake_bcn.wait_terminal(run_id)
