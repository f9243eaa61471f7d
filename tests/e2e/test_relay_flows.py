"""The relay end to end: chat → bridge → hub → example bots → bridge → chat, over sockets."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

from bridge.core.outbox import Lane
from bridge.protocol import build_clarify, build_request, parse
from tests.e2e.e2e_support import WAIT, texts
from tests.e2e.recording_adapter import RecordingAdapter
from tests.support.counted import CountedCalls


def finals_from(messages, sender):  # type: ignore[no-untyped-def]
    return [m for m in messages if m.sender == sender and m.kind == "final"]


async def test_human_message_reaches_the_driver_and_the_reply_streams_back(start_system):
    system = await start_system()
    await system.chat_adapter.say("room", "hello there brave new world")
    reply = await system.wait_for(lambda ms: finals_from(ms, "Echo"))
    assert reply[0].text == "hello there brave new world"
    # The reply streamed: it was posted as a delta preview first and then edited in place.
    assert reply[0].edits >= 1
    assert len([m for m in system.chat.messages if m.sender == "Echo"]) == 1


async def test_ask_command_is_tracked_and_answered_with_a_response(start_system):
    system = await start_system()
    await system.chat_adapter.say("room", "/ask Rules what is 6*7")
    answer = await system.wait_for(lambda ms: finals_from(ms, "Rules"))
    response = parse(answer[0].text)
    assert response is not None and response.type == "RESPONSE"
    assert response.to == "Ada" and response.status == "done" and "42" in response.result
    request_block = next(m for m in system.chat.messages if m.sender == "Ada")
    request = parse(request_block.text)
    assert request.type == "REQUEST" and request.request_id == response.request_id
    assert answer[0].protocol["request_id"] == request.request_id
    conv = await system.app.relay.tracker.get(request.request_id)
    assert conv.status == "done"
    assert [entry.type for entry in conv.history] == ["REQUEST", "RESPONSE"]


async def test_ask_echo_is_answered_in_protocol_form_and_closes_the_request(start_system):
    """The Echo bot answers a request addressed to it with a RESPONSE echoing the task; an
    echo of the REQUEST block itself left the request open until its timeout."""
    system = await start_system()
    await system.chat_adapter.say("room", "/ask Echo say hi")
    answer = await system.wait_for(lambda ms: finals_from(ms, "Echo"))
    response = parse(answer[0].text)
    assert response is not None and response.type == "RESPONSE"
    assert response.to == "Ada" and response.status == "done" and response.result == "say hi"
    conv = await system.app.relay.tracker.get(response.request_id)
    assert conv.status == "done"


async def test_clarify_is_answered_by_a_human_reply(start_system):
    system = await start_system()
    await system.chat_adapter.say("room", "/ask Rules weather")
    clarify = await system.wait_for(lambda ms: finals_from(ms, "Rules"))
    question = parse(clarify[0].text)
    assert question.type == "CLARIFY" and question.to == "Ada"
    conv = await system.app.relay.tracker.get(question.request_id)
    assert conv.status == "clarifying"
    # The human replies to the bot's question in the chat.
    await system.chat_adapter.say("room", "Paris", reply_to=clarify[0].ref.message_id)
    done = await system.wait_for(lambda ms: finals_from(ms, "Rules")[1:])
    response = parse(done[0].text)
    assert response.type == "RESPONSE" and response.request_id == question.request_id
    assert response.status == "done" and "Paris" in response.result
    conv = await system.app.relay.tracker.get(question.request_id)
    assert conv.status == "done"
    assert "ANSWER" in [entry.type for entry in conv.history]


async def test_a_plain_message_answers_the_question_only_when_it_plausibly_is_one(
    start_system,
):
    """Rules asks Ada which city (six choices). "hello everyone" is talk, not her answer:
    it goes to the bots as it is and the question keeps waiting; "Tokyo please" answers."""
    system = await start_system()
    await system.chat_adapter.say("room", "/ask Rules weather")
    [clarify] = await system.wait_for(lambda ms: finals_from(ms, "Rules"))
    request_id = parse(clarify.text).request_id
    await system.chat_adapter.say("room", "hello everyone")
    await system.wait_for(lambda ms: [m for m in finals_from(ms, "Echo")
                                      if m.text == "hello everyone"])
    assert (await system.app.relay.tracker.get(request_id)).status == "clarifying"
    await system.chat_adapter.say("room", "Tokyo please")
    done = await system.wait_for(lambda ms: finals_from(ms, "Rules")[1:])
    response = parse(done[0].text)
    assert response.request_id == request_id and "Tokyo" in response.result
    assert (await system.app.relay.tracker.get(request_id)).status == "done"


async def test_without_the_protocol_a_message_answers_no_clarify(start_system):
    """A binding with the protocol off neither parses nor tracks protocol text, so a
    person's message there answers no bot's question: one left open from when the protocol
    was on stays open, and the message goes to the bots as it is."""
    system = await start_system(binding={"protocol": {"enabled": False}})
    relay = system.app.relay
    lane = Lane("testchat:main", "room")
    await relay.ctx.track(parse(build_request(to="Rules", from_="Ada", task="the weather",
                                              request_id="ada-1", depth=(1, 5))), lane)
    await relay.ctx.track(parse(build_clarify(to="Ada", from_="Rules", request_id="ada-1",
                                              question="which city?", depth=(1, 5))), lane)
    assert (await relay.tracker.get("ada-1")).status == "clarifying"
    await system.chat_adapter.say("room", "Paris")
    [echo] = await system.wait_for(lambda ms: finals_from(ms, "Echo"))
    assert echo.text == "Paris"
    assert (await relay.tracker.get("ada-1")).status == "clarifying"


async def test_plain_reply_to_a_routed_request_is_wrapped_as_a_response(start_system):
    system = await start_system(binding={"protocol": {"enabled": True, "deliver": "natural"}})
    block = build_request(to="Echo", from_="Lotbot", task="say banana",
                          request_id="lotbot-abc123", depth=(2, 5))
    await system.chat_adapter.say("room", block, name="Lotbot", user_id="b-lot", is_bot=True)
    answer = await system.wait_for(lambda ms: finals_from(ms, "Echo"))
    response = parse(answer[0].text)
    assert response.type == "RESPONSE" and response.to == "Lotbot"
    assert response.request_id == "lotbot-abc123"
    assert tuple(response.depth) == (3, 5)
    # Echo got the request as plain language, and its plain echo came back as the Result.
    assert "Lotbot asks you to: say banana" in response.result


async def test_depth_limit_is_answered_by_the_bridge_not_forwarded(start_system):
    system = await start_system()
    block = build_request(to="Rules", from_="Lotbot", task="compute 1+1",
                          request_id="lotbot-deep01", depth=(4, 5)).replace("4/5", "5/5")
    await system.chat_adapter.say("room", block, name="Lotbot", user_id="b-lot", is_bot=True)
    refusal = await system.wait_for(lambda ms: finals_from(ms, "bcn-bridge"))
    response = parse(refusal[0].text)
    assert response.type == "RESPONSE" and response.status == "failed"
    assert response.request_id == "lotbot-deep01" and response.to == "Lotbot"
    assert "Depth limit reached (5/5)" in response.result
    conv = await system.app.relay.tracker.get("lotbot-deep01")
    assert conv.status == "failed"
    # Rules never answered: a marker message shows the chat went quiet for the bots.
    await system.chat_adapter.say("room", "ping after the refusal")
    await system.wait_for(lambda ms: finals_from(ms, "Echo"))
    assert finals_from(system.chat.messages, "Rules") == []


async def test_timeout_posts_a_notice_and_closes_the_request(start_system):
    system = await start_system()
    block = build_request(to="Ghost", from_="Ada", task="anything", request_id="ada-ghost1")
    await system.chat_adapter.say("room", block)
    relay = system.app.relay
    async with asyncio.timeout(WAIT):
        while await relay.tracker.get("ada-ghost1") is None:
            await asyncio.sleep(0.01)
    assert await relay.sweep_once() == []  # not due yet
    system.clock.advance(timedelta(minutes=31))
    closed = await relay.sweep_once()
    assert [conv.request_id for conv in closed] == ["ada-ghost1"]
    notice = await system.wait_for(lambda ms: [m for m in ms if "timed out" in m.text])
    assert "ada-ghost1" in notice[0].text and notice[0].sender == "bcn-bridge"
    assert (await relay.tracker.get("ada-ghost1")).status == "timeout"


async def test_loop_guard_pauses_bot_traffic_until_a_human_speaks(start_system):
    system = await start_system(binding={"loop_guard": {"max_messages": 2, "window_seconds": 60}})
    for n in range(4):
        await system.chat_adapter.say("room", f"@Echo bot chatter {n}", name="Lotbot",
                                      user_id="b-lot", is_bot=True, mentions=("Echo",))
    notice = await system.wait_for(lambda ms: [m for m in ms if "paused" in m.text])
    assert len(notice) == 1
    await system.app.relay.outbox.wait_idle()
    echoed = finals_from(system.chat.messages, "Echo")
    assert len(echoed) <= 2
    # A human speaks: bots may talk again.
    await system.chat_adapter.say("room", "humans are back")
    await system.wait_for(lambda ms: [m for m in finals_from(ms, "Echo")
                                      if m.text == "humans are back"])


async def test_bots_answering_each_other_lose_nothing_to_the_loop_guard(start_system):
    """16 bot replies while the guard allows 4: the rest are held, then shown, not dropped."""
    system = await start_system(
        stream=False, binding={"loop_guard": {"max_messages": 4, "window_seconds": 60}}
    )
    relay = system.app.relay
    [binding_id] = relay.link.bindings_by_id
    for n in range(16):
        await relay.outbound.deliver({
            "event_id": f"loop-{n}", "binding_id": binding_id, "bcs_session_id": "demo:x",
            "run_id": f"r-{n}", "sender": {"bot_uuid": "b", "name": "Echo"}, "kind": "final",
            "text": f"bot says {n}", "seq": 1,
        })
    await relay.outbox.wait_idle()
    shown = [m.text for m in finals_from(system.chat.messages, "Echo")]
    assert shown == [f"bot says {n}" for n in range(4)]
    await system.chat_adapter.say("room", "I am here")
    resumed = await system.wait_for(lambda ms: [m for m in ms if "Bots resume" in m.text])
    await relay.outbox.wait_idle()
    shown = [m.text for m in finals_from(system.chat.messages, "Echo")]
    held = [f"bot says {n}" for n in range(4, 8)]
    assert shown[:8] == [f"bot says {n}" for n in range(8)], shown
    not_kept = 16 - 4 - len(held)
    assert f"{not_kept} more were held but not kept" in resumed[0].text
    assert "4 message(s)" in resumed[0].text


async def test_the_chat_session_comes_from_accepted_messages_and_bots_speaking_up(start_system):
    """A reply to a message the bridge accepted does not set the chat's session (it was
    recorded at acceptance, and a late one must not undo a /new); output that answers no
    message (a bot speaking up) does."""
    system = await start_system(stream=False)
    relay = system.app.relay
    lane = "testchat:main|room|"
    [binding_id] = relay.link.bindings_by_id
    await system.chat_adapter.say("room", "hello", message_id="m-1")
    await system.wait_for(lambda ms: finals_from(ms, "Echo"))
    accepted = await relay.ctx.state.session(lane)
    assert accepted and accepted.startswith("demo:channel_testchat_")

    def output(n: int, session: str, **extra: object) -> dict[str, object]:
        return {"event_id": f"late-{n}", "binding_id": binding_id, "bcs_session_id": session,
                "run_id": f"r-late-{n}", "sender": {"bot_uuid": "b", "name": "Echo"},
                "kind": "final", "text": f"late {n}", "seq": 1, **extra}

    await relay.outbound.deliver(output(1, "demo:an-older-session", source_msg_id="m-1"))
    assert await relay.ctx.state.session(lane) == accepted
    await relay.outbound.deliver(output(2, "demo:a-bot-speaks-up"))
    assert await relay.ctx.state.session(lane) == "demo:a-bot-speaks-up"
    await relay.outbox.wait_idle()
    assert {"late 1", "late 2"} <= set(texts(finals_from(system.chat.messages, "Echo")))


async def test_duplicate_platform_message_is_relayed_once(start_system):
    system = await start_system()
    await system.chat_adapter.say("room", "only once please", message_id="dup-1")
    await system.chat_adapter.say("room", "only once please", message_id="dup-1")
    await system.wait_for(lambda ms: finals_from(ms, "Echo"))
    await system.chat_adapter.say("room", "marker message")
    await system.wait_for(
        lambda ms: [m for m in finals_from(ms, "Echo") if m.text == "marker message"]
    )
    echoed = texts(finals_from(system.chat.messages, "Echo"))
    assert echoed == ["only once please", "marker message"]


async def test_a_platform_that_never_redelivers_is_spared_the_duplicate_filter(
    start_system, monkeypatch
):
    """Such a platform's messages are not claimed in the store first; a repeat that still
    comes (one id handed over twice) is refused by the hub, whose idempotency key the id is."""
    monkeypatch.setattr(RecordingAdapter, "capabilities", replace(
        RecordingAdapter.capabilities, redelivers=False))
    system = await start_system()
    relay = system.app.relay
    seen = relay.ctx.store.seen = CountedCalls(relay.ctx.store.seen, "has", "claim")
    await system.chat_adapter.say("room", "only once please", message_id="dup-1")
    await system.wait_for(lambda ms: finals_from(ms, "Echo"))
    await system.chat_adapter.say("room", "only once please", message_id="dup-1")
    await system.chat_adapter.say("room", "marker message")
    await system.wait_for(
        lambda ms: [m for m in finals_from(ms, "Echo") if m.text == "marker message"]
    )
    assert texts(finals_from(system.chat.messages, "Echo")) == [
        "only once please", "marker message"]
    assert seen.calls == {"has": 0, "claim": 0}
    # A platform that may redeliver claims first, for each message: the claim is the one
    # store statement the read of the seen key used to be, not one more.
    monkeypatch.setattr(RecordingAdapter, "capabilities", replace(
        RecordingAdapter.capabilities, redelivers=True))
    await system.chat_adapter.say("room", "asked about")
    await system.wait_for(
        lambda ms: [m for m in finals_from(ms, "Echo") if m.text == "asked about"]
    )
    assert seen.calls == {"has": 0, "claim": 1}


async def test_require_mention_turns_unmentioned_messages_into_observation(start_system):
    system = await start_system(binding={"require_mention": True})
    await system.chat_adapter.say("room", "just talking among humans")
    await system.chat_adapter.say("room", "@Echo now you", mentions=("Echo",))
    await system.wait_for(lambda ms: finals_from(ms, "Echo"))
    assert texts(finals_from(system.chat.messages, "Echo")) == ["@Echo now you"]


async def test_stop_aborts_the_running_reply(start_system):
    from bridge.bcn.bot import Bot, IncomingMessage, Run

    system = await start_system(bots=False)
    started = asyncio.Event()
    slow = Bot(f"{system.app.bcn_url}/ws/bot", name="Echo")

    @slow.on_message
    async def hang(msg: IncomingMessage, run: Run) -> None:
        await run.delta("thinking")
        started.set()
        await asyncio.sleep(60)

    await slow.start(timeout=WAIT)
    system.bots = [slow]
    await system.wait_for_bots("Echo")
    await system.chat_adapter.say("room", "take your time")
    async with asyncio.timeout(WAIT):
        await started.wait()
    await system.chat_adapter.say("room", "/stop")
    notice = await system.wait_for(lambda ms: [m for m in ms if m.text.startswith("Stopped")])
    assert notice[0].text == "Stopped 1 running reply."
    stopped = await system.wait_for(lambda ms: [m for m in ms if "stopped" in m.text
                                                and m.sender == "Echo"])
    assert stopped


async def test_new_starts_a_fresh_session_and_unknown_commands_get_help(start_system):
    system = await start_system()
    await system.chat_adapter.say("room", "first session")
    await system.wait_for(lambda ms: finals_from(ms, "Echo"))
    relay = system.app.relay
    first = await relay.ctx.state.session("testchat:main|room|")
    assert first.startswith("demo:channel_testchat_")
    await system.chat_adapter.say("room", "/new")
    await system.wait_for(lambda ms: [m for m in ms if "fresh conversation" in m.text])
    await system.chat_adapter.say("room", "second session")
    await system.wait_for(lambda ms: finals_from(ms, "Echo")[1:])
    assert await relay.ctx.state.session("testchat:main|room|") != first
    await system.chat_adapter.say("room", "/frobnicate now")
    help_text = await system.wait_for(lambda ms: [m for m in ms if "Unknown command" in m.text])
    assert "/ask <Bot> <task>" in help_text[0].text
    asked = await system.chat_adapter.say("room", "/requests")
    [answer] = await system.wait_for(lambda ms: [m for m in ms if "No open requests" in m.text])
    assert answer.reply_to == asked  # a command's answer replies to the command


async def test_deletes_are_told_to_the_bots_only_where_the_binding_allows(start_system):
    for relay_edits in (False, True):
        RecordingAdapter.chats.clear()
        system = await start_system(binding={"relay_edits": relay_edits})
        original = f"d-{relay_edits}"
        await system.chat_adapter.say("room", "regrettable words", message_id=original)
        await system.wait_for(lambda ms: finals_from(ms, "Echo"))
        await system.chat_adapter.say("room", "regrettable words", message_id=original,
                                      is_delete=True)
        await system.chat_adapter.say("room", "marker")
        await system.wait_for(lambda ms: "marker" in texts(finals_from(ms, "Echo")))
        relay = system.app.relay
        session = await relay.ctx.state.session("testchat:main|room|")
        history = await relay.link.request("channel.history", {"bcs_session_id": session})
        seen = [m["text"] for m in history["messages"] if m["role"] == "user"]
        assert ("(deleted) regrettable words" in seen) is relay_edits
        # Nobody is asked to answer a deletion.
        assert "(deleted) regrettable words" not in texts(finals_from(system.chat.messages, "Echo"))
        await system.stop()


async def test_edits_are_relayed_only_where_the_binding_allows(start_system):
    from datetime import UTC, datetime

    for relay_edits in (False, True):
        RecordingAdapter.chats.clear()
        system = await start_system(binding={"relay_edits": relay_edits})
        original = f"m-{relay_edits}"  # the bridge's store outlives each run of the loop
        await system.chat_adapter.say("room", "first take", message_id=original)
        await system.wait_for(lambda ms: finals_from(ms, "Echo"))
        await system.chat_adapter.say("room", "second take", message_id=original, is_edit=True,
                                      timestamp=datetime(2026, 11, 29, 13, 0, tzinfo=UTC))
        await system.chat_adapter.say("room", "marker")
        expected = {"first take", "marker"} | ({"(edited) second take"} if relay_edits else set())
        await system.wait_for(lambda ms, want=expected: want <= set(texts(finals_from(ms, "Echo"))))
        await system.app.relay.outbox.wait_idle()
        assert sorted(texts(finals_from(system.chat.messages, "Echo"))) == sorted(expected)
        await system.stop()
