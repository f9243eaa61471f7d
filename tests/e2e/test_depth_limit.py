"""The depth limit holds for every author (issue 31 §5).

Two bots ping-ponging honest REQUESTs reached depth 6/5 and 7/5, were posted and tracked as
open; only the hub's turn guard stopped them. Past the limit only a RESPONSE may follow: a
REQUEST, CLARIFY or HANDOFF from a BCN bot is not relayed as such, and the bridge closes the
chain with a failed RESPONSE that says why. Real hub, bridge and SDK bot over sockets.
"""

from __future__ import annotations

import pytest

from bridge.bcn.bot import Bot, IncomingMessage, Run
from bridge.protocol import build_clarify, build_handoff, build_request, parse
from tests.e2e.e2e_support import WAIT


def _request(depth: str) -> str:
    return ("```\n[REQUEST → @Rules]\nFrom: Echo\nRequestId: echo-ping1\n"
            f"Task: ping\nDepth: {depth}\n```")


PAST_THE_LIMIT = {
    "REQUEST at 6/5": _request("6/5"),
    "REQUEST at 7/5": _request("7/5"),
    "REQUEST at the limit": build_request(to="Rules", from_="Echo", task="ping",
                                          request_id="echo-ping1", depth=(4, 5)
                                          ).replace("Depth: 4/5", "Depth: 5/5"),
    "CLARIFY at 6/5": build_clarify(to="Rules", from_="Echo", question="which?",
                                    request_id="echo-ping1", depth=(4, 5)
                                    ).replace("Depth: 4/5", "Depth: 6/5"),
    "HANDOFF at 9/5": build_handoff(to="Rules", from_="Echo", task="t",
                                    request_id="echo-ping1", depth=(4, 5)
                                    ).replace("Depth: 4/5", "Depth: 9/5"),
    "REQUEST at -1/5": _request("-1/5"),
}


async def _speaking_bot(system, text: str) -> None:
    talker = Bot(f"{system.app.bcn_url}/ws/bot", name="Echo")

    @talker.on_message
    async def answer(msg: IncomingMessage, run: Run) -> None:
        await run.final(text if msg.text == "go" else f"plain: {msg.text}")

    await talker.start(timeout=WAIT)
    system.bots = [talker]
    await system.wait_for_bots("Echo")


@pytest.mark.parametrize("case", sorted(PAST_THE_LIMIT))
async def test_a_bots_message_past_the_limit_is_refused_and_closes_the_chain(
    start_system, case: str
):
    system = await start_system(bots=False)
    await _speaking_bot(system, PAST_THE_LIMIT[case])
    await system.chat_adapter.say("room", "go")
    [refusal] = await system.wait_for(
        lambda ms: [m for m in ms if m.sender == system.app.relay.ctx.bridge_name])
    response = parse(refusal.text)
    assert response is not None and response.type == "RESPONSE"
    assert response.status == "failed" and response.to == "Echo"
    assert response.request_id == "echo-ping1"
    assert "epth" in (response.result or "")
    # The bot's own message is not shown as a request.
    assert not [m for m in system.chat.messages if m.sender == "Echo"]
    conversation = await system.app.relay.tracker.get("echo-ping1")
    assert conversation is not None and conversation.status == "failed"


async def test_a_bots_request_within_the_limit_is_relayed(start_system):
    system = await start_system(bots=False)
    await _speaking_bot(system, _request("4/5"))
    await system.chat_adapter.say("room", "go")
    [shown] = await system.wait_for(lambda ms: [m for m in ms if m.sender == "Echo"])
    assert parse(shown.text).type == "REQUEST"
    conversation = await system.app.relay.tracker.get("echo-ping1")
    assert conversation is not None and conversation.status == "open"


@pytest.mark.parametrize(("depth", "refused"), [("99/5", True), ("-1/5", True), ("0/5", True),
                                                ("2/5", False)])
async def test_a_persons_request_past_the_limit_is_answered_failed(start_system, depth, refused):
    """Kept from before: a person's REQUEST at 99/5 is answered with a failed RESPONSE; and
    `-1/5` is read as invalid, not as 1/5."""
    system = await start_system()
    text = ("```\n[REQUEST → @Rules]\nFrom: Ada\nRequestId: ada-deep1\n"
            f"Task: what is 6*7\nDepth: {depth}\n```")
    await system.chat_adapter.say("room", text)
    bridge = system.app.relay.ctx.bridge_name
    [answer] = await system.wait_for(
        lambda ms: [m for m in ms if m.sender in (bridge, "Rules")])
    response = parse(answer.text)
    assert response.type == "RESPONSE" and response.request_id == "ada-deep1"
    assert (answer.sender == bridge and response.status == "failed") is refused
