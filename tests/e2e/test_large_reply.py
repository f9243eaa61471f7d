"""A 2 MB bot reply: cut to relay.max_reply_chars, said so, posted in parts, nothing stuck."""

from __future__ import annotations

from bridge.bcn.bot import Bot, IncomingMessage, Run
from tests.e2e.e2e_support import WAIT, texts

HUGE = ("a line of a very long bot reply, " * 3 + "\n") * 20_000  # about 2 MB


async def test_a_huge_reply_is_cut_with_a_notice_and_the_chat_goes_on(start_system):
    system = await start_system(bots=False)
    talker = Bot(f"{system.app.bcn_url}/ws/bot", name="Echo")

    @talker.on_message
    async def answer(msg: IncomingMessage, run: Run) -> None:
        await run.final(HUGE if msg.text == "tell me everything" else f"short: {msg.text}")

    await talker.start(timeout=WAIT)
    system.bots = [talker]
    await system.wait_for_bots("Echo")
    await system.chat_adapter.say("room", "tell me everything")
    await system.chat_adapter.say("room", "and then this")
    await system.wait_for(lambda ms: "short: and then this" in texts(ms, "Echo"))
    await system.app.relay.outbox.wait_idle()
    shown = texts(system.chat.messages, "Echo")
    limit = system.app.relay.ctx.max_reply_chars
    assert shown[-1] == "short: and then this"
    long_parts = shown[:-1]
    assert len(long_parts) > 1 and all(len(part) <= 2000 for part in long_parts)
    assert "(reply truncated: " in long_parts[-1]
    assert sum(len(part) for part in long_parts) < limit * 1.05  # not 2 MB of parts
