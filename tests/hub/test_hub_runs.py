"""Runs over real sockets: deliveries per protocol version, outputs, abort, bot-to-bot, replay."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from hub_clients import TestBot, TestLink, binding, next_item, nothing_in

from bridge.bcn import BcnError
from bridge.hub import Hub


@pytest.mark.parametrize("version", [1, 2, 3])
async def test_chat_send_shape_per_protocol_version(
    http: aiohttp.ClientSession, hub: Hub, version: int
) -> None:
    helper = await TestBot.connect(http, hub, name="Helper", protocol_version=version)
    link = await TestLink.connect(http, hub)
    result = await link.inbound("please help", "m1")
    params = (await next_item(helper.sends)).params
    session_id = result["bcs_session_id"]
    assert params["bcs_session_id"] == session_id and params["bcs_group_id"] == "grp"
    assert params["session_key"] == (session_id if version == 3 else "grp")
    assert params["timeout_ms"] == hub.config.run_timeout_ms
    text = params["message"]["content"][0]["text"]
    assert params["message"]["role"] == "user" and isinstance(params["message"]["timestamp"], int)
    if version == 2:
        assert text.startswith("[Group Context]") and text.endswith("\n\nplease help")
        assert "Group: Ops (grp)" in text and "You are: Helper" in text
    else:
        assert text == "please help"
    context = params["session_context"]
    assert context["session_id"] == "grp" and context["message"] == "please help"
    assert context["is_sender"] is False and "Helper" in context["participants"]


async def test_outputs_are_delivered_with_hub_sequence(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    link = await TestLink.connect(http, hub)
    result = await link.inbound("stream please", "m1", thread_id="th-9")
    await next_item(helper.sends)
    await helper.event("run-1", "delta", "Hel")
    await helper.event("run-1", "tool_call_start", tool_call_id="t1", tool_name="search")
    await helper.event("run-1", "delta", "lo")
    await helper.final("run-1", "Hello")
    got = await link.deliveries_until_final()
    assert [(d["kind"], d["text"], d["seq"]) for d in got] == [
        ("delta", "Hel", 1), ("delta", "lo", 2), ("final", "Hello", 3)]
    first = got[0]
    assert first["sender"] == {"bot_uuid": helper.uuid, "name": "Helper"}
    assert first["source_msg_id"] == "m1" and first["thread_id"] == "th-9"
    assert first["bcs_session_id"] == result["bcs_session_id"]
    assert first["binding_id"] == link.binding_id and first["run_id"] == "run-1"
    assert len({d["event_id"] for d in got}) == 3
    await helper.final("run-1", "again")  # a second final of a finished run is dropped
    assert await nothing_in(link.delivers)


async def test_abort_rules(http: aiohttp.ClientSession, hub: Hub) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    link = await TestLink.connect(http, hub, binding("a"), binding("b"))
    bind_a, bind_b = (b["binding_id"] for b in link.payload["bindings"])
    in_a = await link.inbound("long task", "m1", binding_id=bind_a)
    in_b = await link.inbound("other task", "m2", binding_id=bind_b)
    await next_item(helper.sends)
    await next_item(helper.sends)
    session_a, session_b = in_a["bcs_session_id"], in_b["bcs_session_id"]

    with pytest.raises(BcnError) as caught:  # run-2 runs in session b
        await link.conn.request("channel.abort", {"bcs_session_id": session_a,
                                                  "run_id": "run-2"})
    assert caught.value.code == "invalid_request"
    with pytest.raises(BcnError) as caught:
        await link.conn.request("channel.abort", {"bcs_session_id": session_a,
                                                  "run_id": "run-404"})
    assert caught.value.code == "not_found"
    with pytest.raises(BcnError) as caught:
        await link.conn.request("channel.abort", {"bcs_session_id": "grp:nope"})
    assert caught.value.code == "not_found"

    aborted = await link.conn.request("channel.abort", {"bcs_session_id": session_a,
                                                        "run_id": "run-1"})
    assert aborted == {"aborted_run_ids": ["run-1"]}
    told = await next_item(helper.aborts)
    assert told.params == {"session_key": session_a, "run_id": "run-1"}
    notice = await next_item(link.delivers)
    assert (notice["kind"], notice["run_id"]) == ("aborted", "run-1")

    again = await link.conn.request("channel.abort", {"bcs_session_id": session_a,
                                                      "run_id": "run-1"})
    assert again == {"aborted_run_ids": []}  # idempotent for a finished run
    await helper.final("run-1", "too late")  # late events of an aborted run are dropped
    await helper.final("run-2", "done")
    delivered = await next_item(link.delivers)
    assert (delivered["run_id"], delivered["text"]) == ("run-2", "done")
    nothing = await link.conn.request("channel.abort", {"bcs_session_id": session_b})
    assert nothing == {"aborted_run_ids": []}


async def test_abort_waits_for_an_unacked_send(http: aiohttp.ClientSession, hub: Hub) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    helper.ack_delay = 0.15
    link = await TestLink.connect(http, hub)
    result = await link.inbound("slow to ack", "m1")
    aborted = await link.conn.request("channel.abort",
                                      {"bcs_session_id": result["bcs_session_id"]})
    assert aborted == {"aborted_run_ids": ["run-1"]}
    assert (await next_item(helper.aborts)).params["run_id"] == "run-1"


async def test_bot_reply_mentioning_another_bot_reaches_it(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    mantis = await TestBot.connect(http, hub, name="Mantis")
    helper.reply = lambda text: "@Mantis can you check this?"
    link = await TestLink.connect(http, hub)
    await link.inbound("investigate", "m1")
    await next_item(mantis.injects)  # the human message, observed
    send = await next_item(mantis.sends)
    assert send.params["message"]["content"][0]["text"] == "@Mantis can you check this?"
    context = send.params["session_context"]
    assert context["from"] == "Helper" and context["you_are_mentioned"] is True
    assert send.params["channel"]["is_bot"] is True
    assert helper.sends.qsize() == 1  # only the human's message: not its own reply


async def test_empty_final_is_not_routed_on(http: aiohttp.ClientSession, hub: Hub) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    mantis = await TestBot.connect(http, hub, name="Mantis")
    link = await TestLink.connect(http, hub)
    await link.inbound("@Mantis is this for you?", "m1")
    await next_item(helper.injects)
    await next_item(mantis.sends)
    await mantis.final("run-1", "  ")  # "not for me": nothing to answer or observe
    assert (await next_item(link.delivers))["kind"] == "final"
    assert await nothing_in(helper.sends)
    assert helper.injects.empty()


async def test_routing_field_of_a_final_and_include_self(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    mantis = await TestBot.connect(http, hub, name="Mantis")
    helper.reply = lambda text: "@Mantis ignored: the routing field wins"
    helper.routing = {"responders": [{"type": "name", "value": "Helper"}],
                      "include_self": True, "reason": "think again"}
    link = await TestLink.connect(http, hub)
    await link.inbound("go", "m1")
    await next_item(helper.sends)
    again = await next_item(helper.sends)
    context = again.params["session_context"]
    assert context["is_sender"] is True and context["routing_reason"] == "think again"
    await next_item(mantis.injects)
    await next_item(mantis.injects)
    assert mantis.sends.empty()


async def test_ping_pong_guard_stops_bot_loops(
    http: aiohttp.ClientSession, start_hub: object
) -> None:
    hub = await start_hub(max_bot_turns=3)  # type: ignore[operator]
    helper = await TestBot.connect(http, hub, name="Helper")
    mantis = await TestBot.connect(http, hub, name="Mantis")
    helper.reply = lambda text: "@Mantis your turn"
    mantis.reply = lambda text: "@Helper your turn"
    link = await TestLink.connect(http, hub)
    await link.inbound("start", "m1")
    kinds = []
    while not kinds or kinds[-1] != "system":
        kinds.append((await next_item(link.delivers))["kind"])
    # Helper's answer to the person is no bot turn; then 3 bot finals are routed on, and
    # the 4th is stopped.
    assert kinds == ["final"] * 5 + ["system"]
    assert helper.sends.qsize() + mantis.sends.qsize() == 5
    assert await nothing_in(link.delivers)
    await link.inbound("human again", "m2")  # a human message re-arms the exchange
    assert (await next_item(link.delivers))["kind"] == "final"


async def test_answers_to_people_arriving_in_a_row_are_no_ping_pong(
    http: aiohttp.ClientSession, start_hub: object
) -> None:
    """Issue 32's fault runs: after a takeover gap a bot's answers to a dozen queued people's
    messages reach the hub back to back, and the guard told the chat "12 bot turns in a row
    without a human message" — though every one of them answered a person."""
    hub = await start_hub(max_bot_turns=3)  # type: ignore[operator]
    helper = await TestBot.connect(http, hub, name="Helper")
    link = await TestLink.connect(http, hub)
    for n in range(6):
        await link.inbound(f"question {n}", f"q{n}")
        await next_item(helper.sends)
    for n in range(6):  # the answers, all after the last question
        await helper.final(f"run-{n + 1}", f"answer {n}")
    got = [await next_item(link.delivers) for _ in range(6)]
    assert [(d["kind"], d["text"]) for d in got] == [("final", f"answer {n}") for n in range(6)]
    assert await nothing_in(link.delivers)  # no "Stopped passing bot replies on" notice


async def test_lead_only_delivers_driver_outputs_only(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    mantis = await TestBot.connect(http, hub, name="Mantis")
    mantis.reply = lambda text: "from mantis"
    # Mantis's reply reaches the driver (default routing); Helper answers humans only.
    helper.reply = lambda text: "from helper" if text.startswith("@") else None
    link = await TestLink.connect(http, hub, binding(outbound_visibility="lead_only"))
    await link.inbound("@Mantis @Helper both", "m1")
    seen = [(await next_item(link.delivers))["text"]]
    assert seen == ["from helper"]
    await next_item(helper.sends)
    assert (await next_item(helper.sends)).params["session_context"]["from"] == "Mantis"
    assert await nothing_in(link.delivers)


async def test_undelivered_outputs_are_replayed_to_next_link(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    link = await TestLink.connect(http, hub)
    await link.inbound("hi", "m1")
    await next_item(helper.sends)
    await helper.final("run-1", "acked one")
    acked = await next_item(link.delivers)
    link.hold = True
    await helper.event("run-2", "final", "never acked")  # unknown run: dropped
    await link.inbound("more", "m2")
    await next_item(helper.sends)
    await helper.event("run-2", "delta", "part ")
    await helper.final("run-2", "part two")
    held = [await next_item(link.delivers), await next_item(link.delivers)]
    await link.close()

    again = await TestLink.connect(http, hub)
    assert again.payload["pending_deliveries"] == 2
    replayed = [await next_item(again.delivers), await next_item(again.delivers)]
    assert [d["event_id"] for d in replayed] == [d["event_id"] for d in held]
    assert [d["text"] for d in replayed] == ["part ", "part two"]
    assert acked["event_id"] not in {d["event_id"] for d in replayed}
    assert await nothing_in(again.delivers)


async def test_retryable_link_error_is_retried(http: aiohttp.ClientSession, hub: Hub) -> None:
    link = await TestLink.connect(http, hub)
    link.answer_error = BcnError("unavailable", "queue full", retryable=True, retry_after_ms=20)
    await link.inbound("anyone?", "m1")
    first = await next_item(link.delivers)
    link.answer_error = None
    second = await next_item(link.delivers)
    assert second["event_id"] == first["event_id"] and second["kind"] == "system"
    assert await nothing_in(link.delivers)


async def test_each_delivery_goes_to_exactly_one_of_several_links(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    links = [await TestLink.connect(http, hub) for _ in range(2)]
    for n in range(6):
        await links[n % 2].inbound("anyone?", f"m{n}")  # no bot online: six system notices
    merged: asyncio.Queue[dict[str, object]] = asyncio.Queue()

    async def pump(link: TestLink) -> None:
        while True:
            await merged.put(await link.delivers.get())

    pumps = [asyncio.create_task(pump(link)) for link in links]
    seen = [(await next_item(merged))["source_msg_id"] for _ in range(6)]
    assert sorted(seen) == [f"m{n}" for n in range(6)]
    assert await nothing_in(merged)
    for task in pumps:
        task.cancel()


async def test_oldest_undelivered_outputs_are_dropped_over_the_limit(
    http: aiohttp.ClientSession, start_hub: object
) -> None:
    hub = await start_hub(pending_max_per_binding=2)  # type: ignore[operator]
    link = await TestLink.connect(http, hub)
    link.hold = True
    for n in range(1, 4):  # no bot online: one system notice each, none acked
        await link.inbound("anyone?", f"m{n}")
        await next_item(link.delivers)
    await link.close()
    again = await TestLink.connect(http, hub)
    assert again.payload["pending_deliveries"] == 2
    replayed = [(await next_item(again.delivers))["source_msg_id"] for _ in range(2)]
    assert replayed == ["m2", "m3"]


async def test_run_silent_past_its_timeout_ends_with_error(
    http: aiohttp.ClientSession, start_hub: object
) -> None:
    hub = await start_hub(run_timeout_ms=100, sweep_interval_seconds=0.02)  # type: ignore[operator]
    helper = await TestBot.connect(http, hub, name="Helper")
    link = await TestLink.connect(http, hub)
    await link.inbound("think hard", "m1")
    await next_item(helper.sends)
    output = await next_item(link.delivers)
    assert (output["kind"], output["run_id"]) == ("error", "run-1")
    await helper.final("run-1", "finally")  # too late: the run has ended
    assert await nothing_in(link.delivers)
