"""Run events over real sockets: the v3 envelope and its checks, and the legacy forms.

v3 facts are the BCN server's (its bot WebSocket dispatcher and run event parser); the
legacy `delta_text` and `errorMessage` forms are what its own published clients send.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from hub_clients import TestBot, TestLink, next_item, nothing_in

from bridge.bcn import BcnError
from bridge.hub import Hub


async def started_run(
    http: aiohttp.ClientSession, hub: Hub, version: int = 3
) -> tuple[TestBot, TestLink, str]:
    """Helper (the driver) with one running run `run-1`, and a link watching the chat."""
    helper = await TestBot.connect(http, hub, name="Helper", protocol_version=version)
    link = await TestLink.connect(http, hub)
    await link.inbound("go", "m1")
    send = await next_item(helper.sends)
    return helper, link, send.params["bcs_session_id"]


def chat(session: str, seq: int, state: str, **fields: Any) -> dict[str, Any]:
    return {"runId": "run-1", "sessionId": session, "seq": seq, "ts": 1_710_960_001_000,
            "state": state, **fields}


async def test_v3_chat_and_agent_events_become_outputs(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    helper, link, session = await started_run(http, hub)
    await helper.conn.send_event("chat", chat(session, 1, "delta", content="Hel"), seq=1)
    await helper.conn.send_event("agent", {
        "runId": "run-1", "sessionId": session, "seq": 2, "ts": 1, "stream": "tool",
        "phase": "start", "toolCallId": "t1", "name": "search", "args": {"q": "x"}}, seq=2)
    await helper.conn.send_event("agent", {
        "runId": "run-1", "sessionId": session, "seq": 3, "ts": 1, "stream": "thinking",
        "deltaText": "hmm"}, seq=3)
    await helper.conn.send_event("chat", chat(session, 4, "delta", deltaText="lo"), seq=4)
    await helper.conn.send_event("chat", chat(session, 5, "final", content="Hello",
                                              stopReason="complete"), seq=5)
    got = await link.deliveries_until_final()
    assert [(d["kind"], d["text"], d["seq"]) for d in got] == [
        ("delta", "Hel", 1), ("delta", "lo", 2), ("final", "Hello", 3)]
    assert helper.refusals.empty()


@pytest.mark.parametrize("name, payload, outer, reason", [
    ("chat.event", {"run_id": "run-1", "state": "delta"}, None, "unsupported V3 run event"),
    ("interaction", {"runId": "run-1"}, None, "interaction"),
    ("chat", {"sessionId": "S", "seq": 1, "ts": 1, "state": "delta"}, None, "runId"),
    ("chat", {"runId": "run-1", "seq": 1, "ts": 1, "state": "delta"}, None, "sessionId"),
    ("chat", {"runId": "run-1", "sessionId": "S", "ts": 1, "state": "delta"}, None, "seq"),
    ("chat", {"runId": "run-1", "sessionId": "S", "seq": 1, "state": "delta"}, None, "ts"),
    ("chat", {"runId": "run-1", "sessionId": "S", "seq": 1, "ts": 1, "state": "done"}, None,
     "state"),
    ("chat", {"runId": "run-1", "sessionId": "S", "seq": 1, "ts": 1, "state": "delta"}, 9,
     "frame seq does not match"),
    ("agent", {"runId": "run-1", "sessionId": "S", "seq": 1, "ts": 1, "stream": "dance"}, None,
     "agent stream"),
    ("agent", {"runId": "run-1", "sessionId": "S", "seq": 1, "ts": 1, "stream": "tool",
               "phase": "result", "toolCallId": "t", "name": "n"}, None, "isError"),
    ("chat", {"runId": "run-9", "sessionId": "S", "seq": 1, "ts": 1, "state": "delta"}, None,
     "unknown"),
    ("chat", {"runId": "run-1", "sessionId": "grp:other", "seq": 1, "ts": 1,
              "state": "delta"}, None, "identity mismatch"),
])
async def test_v3_events_are_checked_and_refusals_explained(
    http: aiohttp.ClientSession, hub: Hub, name: str, payload: dict[str, Any],
    outer: int | None, reason: str
) -> None:
    helper, link, session = await started_run(http, hub)
    payload = {key: session if value == "S" else value for key, value in payload.items()}
    await helper.conn.send_event(name, payload, seq=outer)
    refusal = await next_item(helper.refusals)
    assert refusal["code"] == "invalid_request" and reason in refusal["message"]
    assert "retry_after_ms" not in refusal
    # The connection and the run go on: a valid event is still taken.
    await helper.conn.send_event("chat", chat(session, 1, "final", content="ok"), seq=1)
    assert (await next_item(link.delivers))["text"] == "ok"


async def test_v3_seq_must_increase_and_a_run_ends_once(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    helper, link, session = await started_run(http, hub)
    await helper.conn.send_event("chat", chat(session, 2, "delta", content="a"), seq=2)
    assert (await next_item(link.delivers))["text"] == "a"
    for seq in (2, 1):  # duplicate, then regressed
        await helper.conn.send_event("chat", chat(session, seq, "delta", content="b"), seq=seq)
        assert "duplicate or regressed" in (await next_item(helper.refusals))["message"]
    final = chat(session, 3, "final", content="done")
    await helper.conn.send_event("chat", final, seq=3)
    assert (await next_item(link.delivers))["kind"] == "final"
    await helper.conn.send_event("chat", final, seq=3)  # an identical replay: ignored
    assert await nothing_in(helper.refusals)
    await helper.conn.send_event("chat", chat(session, 4, "final", content="again"), seq=4)
    assert "terminal" in (await next_item(helper.refusals))["message"]
    assert await nothing_in(link.delivers)


async def test_v3_errors_and_aborts(http: aiohttp.ClientSession, hub: Hub) -> None:
    helper, link, session = await started_run(http, hub)
    await helper.conn.send_event("agent", {
        "runId": "run-1", "sessionId": session, "seq": 1, "ts": 1, "stream": "error",
        "errorCode": "MODEL_ERROR", "errorMessage": "model failed"}, seq=1)
    error = await next_item(link.delivers)
    assert (error["kind"], error["text"]) == ("error", "model failed")
    await link.inbound("once more", "m2")
    await next_item(helper.sends)
    aborted = await link.conn.request("channel.abort", {"bcs_session_id": session})
    assert aborted == {"aborted_run_ids": ["run-2"]}
    assert (await next_item(link.delivers))["kind"] == "aborted"
    await helper.conn.send_event("chat", {"runId": "run-2", "sessionId": session, "seq": 1,
                                          "ts": 1, "state": "aborted",
                                          "stopReason": "aborted"}, seq=1)
    assert await nothing_in(helper.refusals)  # the bot's confirmation is welcome
    assert await nothing_in(link.delivers)


async def test_legacy_delta_text_is_read(http: aiohttp.ClientSession, hub: Hub) -> None:
    """Regression (issue 15): the BCN server's own v2 client streams `delta_text` and no
    `message`; the hub read only `message.content`, so every delta arrived empty."""
    helper, link, _ = await started_run(http, hub, version=2)
    for text in ("Hel", "lo"):
        await helper.conn.send_event("chat.event", {"run_id": "run-1", "bcs_group_id": "grp",
                                                    "state": "delta", "delta_text": text})
    await helper.conn.send_event("chat.event", {"run_id": "run-1", "bcs_group_id": "grp",
                                                "state": "error", "errorMessage": "It broke",
                                                "errorCode": "DSH_TURN"})
    got = await link.deliveries_until_final()
    assert [(d["kind"], d["text"]) for d in got] == [
        ("delta", "Hel"), ("delta", "lo"), ("error", "It broke")]


async def test_legacy_final_without_text_keeps_the_streamed_text(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    helper, link, _ = await started_run(http, hub, version=2)
    mantis = await TestBot.connect(http, hub, name="Mantis", protocol_version=2)
    await helper.conn.send_event("chat.event", {"run_id": "run-1", "state": "delta",
                                                "delta_text": "@Mantis look"})
    await helper.conn.send_event("chat.event", {"run_id": "run-1", "state": "final"})
    got = await link.deliveries_until_final()
    assert got[-1]["kind"] == "final" and got[-1]["text"] == "@Mantis look"
    routed = await next_item(mantis.sends)  # routed on with the streamed text
    assert routed.params["session_context"]["message"] == "@Mantis look"


async def test_v1_v2_bots_are_not_held_to_v3_rules(http: aiohttp.ClientSession, hub: Hub) -> None:
    helper, link, _ = await started_run(http, hub, version=1)
    await helper.conn.send_event("chat", {"runId": "run-1"})  # not theirs: ignored quietly
    await helper.conn.send_event("chat.event", {"run_id": "run-404", "state": "final"})
    assert await nothing_in(helper.refusals)
    await helper.final("run-1", "legacy works")
    assert (await next_item(link.delivers))["text"] == "legacy works"


async def test_a_refused_delivery_is_told_to_the_chat(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    helper.refuse = BcnError("INVALID_REQUEST", "chat params require session_context")
    link = await TestLink.connect(http, hub)
    await link.inbound("hello", "m1")
    notice = await next_item(link.delivers)
    assert notice["kind"] == "system" and notice["source_msg_id"] == "m1"
    assert "Helper did not take this message" in notice["text"]
    assert "chat params require session_context" in notice["text"]


async def test_a_reused_run_id_is_told_to_the_chat(http: aiohttp.ClientSession, hub: Hub) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    helper.fixed_run_id = "run-same"
    link = await TestLink.connect(http, hub)
    await link.inbound("first", "m1")
    await helper.final("run-same", "one")
    assert (await next_item(link.delivers))["text"] == "one"
    await link.inbound("second", "m2")
    notice = await next_item(link.delivers)
    assert notice["kind"] == "system" and "already used" in notice["text"]


async def test_deliveries_have_fresh_ids_and_keys_across_reconnects_and_restarts(
    http: aiohttp.ClientSession, tmp_path: object
) -> None:
    """Regression (issue 15): request ids restarted per connection and per hub start, so
    a client that remembers ids dropped the first messages after a reconnect."""
    from hub_clients import hub_config

    config = hub_config(tmp_path)
    ids: list[str] = []
    keys: list[str] = []
    token = None
    for _ in range(2):  # two hub starts
        async with Hub(config) as hub:
            link = await TestLink.connect(http, hub)
            for attempt in range(2):  # two connections of the same bot per start
                params = {"token": token} if token else {"name": "Helper"}
                bot = await TestBot.connect(http, hub, **params)
                token = bot.token
                await link.inbound("hi", f"m-{len(ids)}")
                send = await next_item(bot.sends)
                ids.append(send.id)
                keys.append(send.params["idempotency_key"])
                await bot.close()
                del attempt
            await link.close()
    assert len(set(ids)) == len(ids) == 4
    assert len(set(keys)) == 4
