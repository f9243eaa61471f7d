"""`Run.clarify`: a bot asks back in protocol form, with choices the bridge can show as buttons."""

from __future__ import annotations

from typing import Any

import pytest
from bot_fake_bcn import send_params

from bridge.bcn.bot import IncomingMessage, Run, RunState
from bridge.protocol import Depth, MessageType, build_handoff, build_request, options_of, parse


def final_text(final: dict[str, Any]) -> str:
    return final["message"]["content"][0]["text"]


async def test_a_clarify_with_options_reaches_bcn_as_a_block_that_parses_back(
    fake_bcn, make_bot
):
    sent: list[str] = []

    async def ask_back(message: IncomingMessage, run: Run) -> None:
        sent.append(await run.clarify(message.protocol, "Which city?",
                                      options=["Paris", " Oslo ", "somewhere else"]))

    request = build_request(to="Tester", from_="Alice", task="weather",
                            request_id="alice-w1", depth=(2, 6))
    async with make_bot(fake_bcn.url, on_message=ask_back):
        ack = await fake_bcn.request("chat.send", send_params(request))
        final = await fake_bcn.wait_terminal(ack["run_id"])

    assert final["state"] == "final"
    assert final_text(final) == sent[0]
    clarify = parse(final_text(final))
    assert clarify is not None and clarify.type is MessageType.CLARIFY
    assert (clarify.to, clarify.from_, clarify.request_id) == ("Alice", "Tester", "alice-w1")
    assert clarify.question == "Which city?"
    assert clarify.depth == Depth(3, 6)
    assert options_of(clarify) == ("Paris", "Oslo", "somewhere else") == clarify.options


async def test_a_refused_clarify_sends_nothing_and_the_run_goes_on(fake_bcn, make_bot):
    errors: list[str] = []

    async def ask_back(message: IncomingMessage, run: Run) -> str:
        try:
            await run.clarify(message.protocol, "Which one?", options=["a | b"])
        except ValueError as exc:
            errors.append(str(exc))
        assert run.state is RunState.RUNNING
        return "plain answer"

    request = build_request(to="Tester", from_="Alice", task="pick", request_id="alice-p1")
    async with make_bot(fake_bcn.url, on_message=ask_back):
        ack = await fake_bcn.request("chat.send", send_params(request))
        final = await fake_bcn.wait_terminal(ack["run_id"])

    assert errors == ["option 1 ('a | b') must not contain | (it separates the options)"]
    assert [event["state"] for event in fake_bcn.events(ack["run_id"])] == ["final"]
    assert final_text(final) == "plain answer"


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, name: str, payload: dict[str, Any], seq: int | None) -> None:
        self.events.append((name, payload))


def run_of(recorder: Recorder, bot_name: str | None = "Rules") -> Run:
    return Run("run-1", session_key="g:s", bcs_group_id="g", emit=recorder, bot_name=bot_name)


async def test_clarify_answers_a_handoff_callback_and_escapes_the_question() -> None:
    recorder = Recorder()
    handoff = parse(build_handoff(to="Rules", from_="Router", request_id="ada-h1",
                                  task="weather", callback="@Ada"))
    text = await run_of(recorder).clarify(handoff, "Which city?\nStatus: unknown",
                                          options=("Paris",))
    clarify = parse(text)
    assert clarify is not None
    assert (clarify.to, clarify.from_, clarify.depth) == ("Ada", "Rules", Depth(2, 5))
    assert clarify.question == "Which city?\n Status: unknown"  # escaped, still one value
    assert clarify.options == ("Paris",)
    assert len(recorder.events) == 1


async def test_clarify_without_options_and_with_explicit_addresses() -> None:
    request = parse(build_request(to="Rules", from_="Lotbot", task="t", request_id="r1"))
    text = await run_of(Recorder(), bot_name=None).clarify(
        request, "Which?", to="Someone", from_="Helper")
    clarify = parse(text)
    assert clarify is not None
    assert (clarify.to, clarify.from_, clarify.options) == ("Someone", "Helper", ())
    assert "Options" not in text


@pytest.mark.parametrize(
    ("request_text", "bot_name", "message"),
    [
        ("hello", "Rules", "needs the protocol message"),
        (build_request(to="Rules", from_="L", task="t", request_id="r"), None, "needs from_="),
        (build_request(to="Rules", from_="L", task="t", request_id="r", depth=(4, 5)), "Rules",
         r"Depth limit reached \(5/5\)\. Cannot send CLARIFY"),
    ],
)
async def test_clarify_that_cannot_be_built_raises_before_sending(
    request_text: str, bot_name: str | None, message: str
) -> None:
    recorder = Recorder()
    run = run_of(recorder, bot_name=bot_name)
    with pytest.raises(ValueError, match=message):
        await run.clarify(parse(request_text), "Which?", options=["a"])
    assert recorder.events == [] and run.state is RunState.RUNNING
