"""How the SDK answers BCN's requests: runs, streaming, abort, history, inject."""

from __future__ import annotations

import asyncio
import logging

import pytest
from bot_fake_bcn import send_params

from bridge.bcn import BcnError, ErrorCode
from bridge.bcn.bot import IncomingMessage, Run, route_to

SESSION = "grp-1:channel_webchat_0123abcd"


async def test_ack_comes_first_then_deltas_then_final(fake_bcn, make_bot):
    seen: list[IncomingMessage] = []

    async def stream(message: IncomingMessage, run: Run) -> None:
        seen.append(message)
        await run.delta("Hello ")
        await run.delta("world")
        await run.final("Hello world", routing=route_to("DBA", reason="needs a DBA"))

    async with make_bot(fake_bcn.url, on_message=stream):
        ack = await fake_bcn.request("chat.send", send_params("hi there"))
        run_id = ack["run_id"]
        assert run_id.startswith("run-")
        final = await fake_bcn.wait_terminal(run_id)

    events = fake_bcn.events(run_id)
    assert [e["state"] for e in events] == ["delta", "delta", "final"]
    assert [e["message"]["content"][0]["text"] for e in events] == ["Hello ", "world",
                                                                     "Hello world"]
    assert all(e["bcs_group_id"] == "grp-1" and e["message"]["role"] == "assistant"
               for e in events)
    assert all(isinstance(e["message"]["timestamp"], int) for e in events)
    assert final["routing"]["responders"] == [{"type": "name", "value": "DBA"}]
    ack_index = next(i for i, f in enumerate(fake_bcn.frames)
                     if f.get("type") == "res" and f.get("payload", {}).get("run_id") == run_id)
    first_event = next(i for i, f in enumerate(fake_bcn.frames)
                       if f.get("type") == "event" and f["payload"]["run_id"] == run_id)
    assert ack_index < first_event
    message = seen[0]
    assert message.text == "hi there"
    assert message.session_key == message.bcs_session_id == SESSION
    assert message.channel.identity_forwarding and message.channel.actor_name == "Alice"
    assert message.sender_name == "Alice" and message.you_are_mentioned


async def test_each_message_gets_its_own_run(fake_bcn, make_bot):
    async def reply(message: IncomingMessage, run: Run) -> str:
        return message.text.upper()

    async with make_bot(fake_bcn.url, on_message=reply):
        acks = await asyncio.gather(*(fake_bcn.request("chat.send", send_params(f"m{i}"))
                                      for i in range(5)))
        finals = [await fake_bcn.wait_terminal(a["run_id"]) for a in acks]
    assert len({a["run_id"] for a in acks}) == 5
    assert [f["message"]["content"][0]["text"] for f in finals] == [f"M{i}" for i in range(5)]


async def test_run_without_final_still_terminates(fake_bcn, make_bot):
    async def stream_only(message: IncomingMessage, run: Run) -> None:
        if message.text == "stream":
            await run.delta("a ")
            await run.delta("b")

    async with make_bot(fake_bcn.url, on_message=stream_only):
        streamed = (await fake_bcn.request("chat.send", send_params("stream")))["run_id"]
        silent = (await fake_bcn.request("chat.send", send_params("silent")))["run_id"]
        streamed_final = await fake_bcn.wait_terminal(streamed)
        silent_final = await fake_bcn.wait_terminal(silent)
    assert streamed_final["state"] == "final"
    assert streamed_final["message"]["content"][0]["text"] == "a b"
    assert silent_final["state"] == "final"
    assert silent_final["message"]["content"][0]["text"] == ""


async def test_handler_exception_becomes_error_event(fake_bcn, make_bot, caplog):
    async def broken(message: IncomingMessage, run: Run) -> str:
        await run.delta("thinking")
        raise LookupError("no such table")

    async with make_bot(fake_bcn.url, on_message=broken):
        run_id = (await fake_bcn.request("chat.send", send_params("hi")))["run_id"]
        terminal = await fake_bcn.wait_terminal(run_id)
    assert terminal["state"] == "error"
    text = terminal["message"]["content"][0]["text"]
    assert "LookupError" in text and len(text) <= 200
    assert "Traceback" in caplog.text and "no such table" in caplog.text
    assert [e["state"] for e in fake_bcn.events(run_id)] == ["delta", "error"]


async def test_tool_calls_are_reported(fake_bcn, make_bot):
    async def with_tool(message: IncomingMessage, run: Run) -> str:
        await run.tool_call_start("tc-1", "search", {"query": "deadlock"})
        await run.tool_call_end("tc-1", "search", {"results": []})
        return "done"

    async with make_bot(fake_bcn.url, on_message=with_tool):
        run_id = (await fake_bcn.request("chat.send", send_params("hi")))["run_id"]
        await fake_bcn.wait_terminal(run_id)
    start, end, final = fake_bcn.events(run_id)
    assert start["state"] == "tool_call_start" and start["args"] == {"query": "deadlock"}
    assert end["state"] == "tool_call_end" and end["success"] is True
    assert final["state"] == "final"


async def test_abort_cancels_exactly_that_run_and_drops_late_output(fake_bcn, make_bot):
    release = asyncio.Event()
    cancelled: list[str] = []

    async def slow(message: IncomingMessage, run: Run) -> str:
        await run.delta("working")
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancelled.append(message.text)
            await run.delta("late delta")  # suppressed: the run was aborted
            await run.final("late final")
            raise
        return f"finished {message.text}"

    async with make_bot(fake_bcn.url, on_message=slow):
        doomed = (await fake_bcn.request("chat.send", send_params("one")))["run_id"]
        survivor = (await fake_bcn.request("chat.send", send_params("two")))["run_id"]
        await fake_bcn.wait_until(lambda: len(fake_bcn.events(doomed)) == 1
                                  and len(fake_bcn.events(survivor)) == 1)
        answer = await fake_bcn.request("chat.abort", {"session_key": SESSION, "run_id": doomed})
        assert answer == {"aborted": True, "aborted_run_ids": [doomed]}
        assert cancelled == ["one"]
        release.set()
        survivor_final = await fake_bcn.wait_terminal(survivor)

        again = await fake_bcn.request("chat.abort", {"session_key": SESSION, "run_id": doomed})
        assert again["aborted_run_ids"] == []
        finished = await fake_bcn.request("chat.abort",
                                          {"session_key": SESSION, "run_id": survivor})
        assert finished["aborted_run_ids"] == []

    assert [e["state"] for e in fake_bcn.events(doomed)] == ["delta", "aborted"]
    assert survivor_final["message"]["content"][0]["text"] == "finished two"


async def test_abort_of_unknown_run_or_other_session_is_an_error(fake_bcn, make_bot):
    release = asyncio.Event()

    async def slow(message: IncomingMessage, run: Run) -> str:
        await release.wait()
        return "done"

    async with make_bot(fake_bcn.url, on_message=slow):
        run_id = (await fake_bcn.request("chat.send", send_params("x")))["run_id"]
        with pytest.raises(BcnError) as unknown:
            await fake_bcn.request("chat.abort", {"session_key": SESSION, "run_id": "run-nope"})
        assert unknown.value.code == ErrorCode.NOT_FOUND
        with pytest.raises(BcnError) as other:
            await fake_bcn.request("chat.abort", {"session_key": "grp-1:other", "run_id": run_id})
        assert other.value.code == ErrorCode.INVALID_REQUEST
        with pytest.raises(BcnError) as malformed:
            await fake_bcn.request("chat.abort", {"session_key": SESSION})
        assert malformed.value.code == ErrorCode.INVALID_REQUEST
        release.set()
        final = await fake_bcn.wait_terminal(run_id)
    assert final["state"] == "final"


async def test_history_holds_user_messages_and_own_finals(fake_bcn, make_bot):
    async def reply(message: IncomingMessage, run: Run) -> str:
        return f"re: {message.text}"

    async with make_bot(fake_bcn.url, on_message=reply):
        for text in ("first", "second"):
            run_id = (await fake_bcn.request("chat.send", send_params(text)))["run_id"]
            await fake_bcn.wait_terminal(run_id)
        history = await fake_bcn.request("chat.history", {"session_key": SESSION, "limit": 3})
        empty = await fake_bcn.request("chat.history", {"session_key": "grp-9:nothing"})
        with pytest.raises(BcnError) as bad:
            await fake_bcn.request("chat.history", {"session_key": SESSION, "limit": "all"})

    assert history["session_key"] == SESSION and history["session_id"] == "grp-1"
    assert [(m["role"], m["content"]) for m in history["messages"]] == [
        ("assistant", "re: first"), ("user", "second"), ("assistant", "re: second")]
    assert empty["messages"] == []
    assert bad.value.code == ErrorCode.INVALID_REQUEST


async def test_inject_is_acked_recorded_and_observed(fake_bcn, make_bot):
    observed: list[IncomingMessage] = []

    async def never_called(message: IncomingMessage, run: Run) -> str:
        raise AssertionError("chat.inject must not start a run")

    async def observe(message: IncomingMessage) -> None:
        observed.append(message)

    bot = make_bot(fake_bcn.url, on_message=never_called)
    bot.on_observe(observe)
    async with bot:
        answer = await fake_bcn.request("chat.inject", send_params("just so you know"))
        await fake_bcn.wait_until(lambda: len(observed) == 1)
        history = await fake_bcn.request("chat.history", {"session_key": SESSION})
    assert answer == {}
    assert observed[0].observe_only and observed[0].text == "just so you know"
    assert history["messages"][0]["content"] == "just so you know"


async def test_bad_requests_get_clear_errors_and_the_bot_stays_up(fake_bcn, make_bot, caplog):
    caplog.set_level(logging.WARNING)

    async with make_bot(fake_bcn.url, on_message=lambda m, r: asyncio.sleep(0, "ok")) as bot:
        with pytest.raises(BcnError) as no_session:
            await fake_bcn.request("chat.send", {"message": {"content": "hi"}})
        assert no_session.value.code == ErrorCode.INVALID_REQUEST
        with pytest.raises(BcnError) as bad_message:
            await fake_bcn.request("chat.send", send_params("x", message="not an object"))
        assert bad_message.value.code == ErrorCode.INVALID_REQUEST
        with pytest.raises(BcnError) as unknown:
            await fake_bcn.request("chat.teleport", {})
        assert unknown.value.code == ErrorCode.UNKNOWN_METHOD
        run_id = (await fake_bcn.request("chat.send", send_params("still here")))["run_id"]
        final = await fake_bcn.wait_terminal(run_id)
        assert bot.connected
    assert final["message"]["content"][0]["text"] == "ok"


async def test_stop_cancels_running_answers(fake_bcn, make_bot):
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def forever(message: IncomingMessage, run: Run) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    bot = make_bot(fake_bcn.url, on_message=forever)
    await bot.start()
    await fake_bcn.request("chat.send", send_params("x"))
    await started.wait()
    await bot.stop()
    assert cancelled.is_set()
    assert not bot.connected
