"""Backpressure: a bot or link that reads slower than it is sent to (docs/hub.md).

Real hub, real sockets, SDK bots. A consumer that falls behind is made by pausing the
reading side of its socket, as a stuck process would; nothing here measures time — each
test checks what arrived, what was shed, and the hub's own counters against the bounds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from hub_clients import StartHub, TestLink, next_item, until

from bridge.bcn.bot import Bot, IncomingMessage, Run
from bridge.bcn.examples.echo import build_echo_bot
from bridge.hub import Hub
from bridge.hub.state import BotLink
from bridge.retry import Backoff

WAIT = 10.0


def stop_reading(bot: Bot) -> Callable[[], None]:
    """Stop reading the bot's socket (the kernel's buffers fill, then the hub's); returns
    the function that starts it again."""
    connection = bot._connection
    assert connection is not None
    transport = connection.ws._writer.transport  # type: ignore[attr-defined]
    transport.pause_reading()
    return transport.resume_reading  # type: ignore[no-any-return]


class Observer:
    """An SDK bot that only observes, and keeps what it saw in order."""

    def __init__(self, hub: Hub, name: str) -> None:
        self.seen: list[str] = []
        self.bot = Bot(hub.url + "/ws/bot", name=name, apply_env=False, on_observe=self._seen,
                       backoff=Backoff(initial=0.05, maximum=0.2))

    async def _seen(self, message: IncomingMessage) -> None:
        self.seen.append(message.text)


@pytest.fixture
async def bots() -> AsyncIterator[list[Bot]]:
    """Bots a test started; each is reading again, then stopped, after the test."""
    started: list[Bot] = []
    yield started
    for bot in started:
        await bot.stop()


async def online(hub: Hub, *bots: Bot) -> list[BotLink]:
    for bot in bots:
        await bot.start(timeout=WAIT)
    assert hub.state is not None
    links = []
    for bot in bots:
        assert bot.bot_uuid is not None
        link = hub.state.presence.get(bot.bot_uuid)
        assert link is not None
        links.append(link)
    return links


async def test_a_bot_that_stops_reading_is_shed_then_cut_off_while_another_keeps_answering(
    start_hub: StartHub, http: aiohttp.ClientSession, bots: list[Bot],
    caplog: pytest.LogCaptureFixture,
) -> None:
    hub = await start_hub(observer_queue_max=10, bot_queue_max=20, observer_shed_limit=15,
                          send_queue_chars=64 * 1024)
    helper = build_echo_bot(hub.url + "/ws/bot", name="Helper", stream=False, apply_env=False)
    mantis = Observer(hub, "Mantis")
    bots += [helper, mantis.bot]
    _, stuck = await online(hub, helper, mantis.bot)
    link = await TestLink.connect(http, hub)
    resume = stop_reading(mantis.bot)
    caplog.set_level(logging.INFO, "bridge.hub")

    answered = []
    for n in range(40):  # each: Helper answers; Mantis is sent the message and the answer
        await link.inbound(f"message {n}", f"m{n}")
        final = (await link.deliveries_until_final())[-1]
        answered.append(final["text"])

    assert answered == [f"message {n}" for n in range(40)]  # none of them held up
    assert hub.state is not None
    pressure = hub.state.backpressure
    # 10 injects went out, the next 15 were shed, then Mantis was cut off.
    assert (pressure.injects_shed, pressure.bots_cut, pressure.injects_cut) == (15, 1, 10)
    assert stuck.backlog.cut and stuck.conn.closed
    assert stuck.backlog.peak <= 10 and stuck.backlog.shed_total == 15
    assert stuck.conn.peak_queued <= 64 * 1024
    assert hub.state.presence.get(stuck.record.bot_uuid) is not stuck
    assert pressure.sends_refused == 0
    logged = caplog.text
    assert "Mantis" in logged and "is not keeping up" in logged
    assert "disconnected, too slow: 15 chat.inject shed in a row" in logged
    metrics = await (await http.get(hub.http_url + "/metrics")).text()
    assert "bcn_hub_injects_shed_total 15.0" in metrics
    assert "bcn_hub_slow_bots_disconnected_total 1.0" in metrics
    resume()


async def test_a_burst_beyond_the_bound_loses_injects_only_for_the_slow_observer(
    start_hub: StartHub, http: aiohttp.ClientSession, bots: list[Bot],
) -> None:
    hub = await start_hub(observer_queue_max=10, bot_queue_max=20, observer_shed_limit=1000,
                          groups=[{"id": "grp", "bots": ["Fast", "Slow"]}])
    fast, slow = Observer(hub, "Fast"), Observer(hub, "Slow")
    bots += [fast.bot, slow.bot]
    _, slow_link = await online(hub, fast.bot, slow.bot)
    link = await TestLink.connect(http, hub)
    resume = stop_reading(slow.bot)

    burst = [f"burst {n}" for n in range(50)]
    for n, text in enumerate(burst):
        await link.inbound(text, f"b{n}", deliver="observe")
    await until(lambda: len(fast.seen) == 50, WAIT)
    assert hub.state is not None
    pressure = hub.state.backpressure
    assert pressure.injects_shed == 40 and slow_link.backlog.peak <= 10
    assert slow_link.backlog.shedding

    resume()
    await until(lambda: slow.bot.injects_shed == 40, WAIT)  # the "caught up" notice
    assert fast.seen == burst  # every one, in order
    assert slow.seen == burst[:10]  # what fit in its queue; the rest were shed...
    assert slow.bot.backpressure is not None
    assert slow.bot.backpressure["state"] == "caught_up"  # ... and it was told how many
    assert not slow_link.backlog.shedding and slow_link.backlog.shed_total == 40
    assert fast.bot.injects_shed == 0 and pressure.bots_cut == 0

    more = [f"after {n}" for n in range(3)]  # caught up: it gets everything again
    for n, text in enumerate(more):
        await link.inbound(text, f"a{n}", deliver="observe")
    await until(lambda: slow.seen[-3:] == more, WAIT)


async def test_a_responder_that_cannot_keep_up_has_its_deliveries_failed_in_the_chat(
    start_hub: StartHub, http: aiohttp.ClientSession, bots: list[Bot],
) -> None:
    hub = await start_hub(observer_queue_max=3, bot_queue_max=3, request_timeout_seconds=0.5)
    helper = build_echo_bot(hub.url + "/ws/bot", name="Helper", stream=False, apply_env=False)
    bots.append(helper)
    (helper_link,) = await online(hub, helper)
    link = await TestLink.connect(http, hub)
    resume = stop_reading(helper)

    answers = [await link.inbound(f"question {n}", f"q{n}") for n in range(6)]

    sent = [a for a in answers if a["deliveries"]]
    assert len(sent) == 3  # three went out; the other three were refused at once
    assert all(a["deliveries"] == [] for a in answers[3:])
    notices = [await next_item(link.delivers, WAIT) for _ in range(6)]
    assert all(n["kind"] == "system" for n in notices)
    by_message = {n["source_msg_id"]: n["text"] for n in notices}
    for n in range(3, 6):
        assert by_message[f"q{n}"] == ("Helper did not take this message: it is not keeping up "
                                       "(3 messages are waiting for it).")
    for n in range(3):  # not hung either: unanswered, they fail when their time is up
        assert by_message[f"q{n}"] == ("Helper did not take this message: it did not "
                                       "acknowledge it in time.")
    assert hub.state is not None
    assert hub.state.backpressure.sends_refused == 3
    assert hub.state.runs.running_count == 0 and hub.state.runs.pending_in(
        answers[0]["bcs_session_id"]) == []
    assert helper_link.backlog.peak <= 3
    resume()


async def test_a_link_that_stops_reading_leaves_deliveries_in_the_outbox(
    start_hub: StartHub, http: aiohttp.ClientSession, bots: list[Bot],
) -> None:
    limit = 256 * 1024

    async def long_answer(message: IncomingMessage, _run: Run) -> str:
        return f"{message.text} " + "z" * 190_000

    hub = await start_hub(send_queue_chars=limit)
    helper = Bot(hub.url + "/ws/bot", name="Helper", apply_env=False, on_message=long_answer)
    bots.append(helper)
    await online(hub, helper)
    link = await TestLink.connect(http, hub)
    assert hub.state is not None
    (hub_side,) = hub.state.links.connections_for(link.binding_id)
    link.ws._writer.transport.pause_reading()  # type: ignore[union-attr]

    texts = [f"question {n}" for n in range(80)]  # ≈ 15 MB of answers
    answers: list[asyncio.Future[Any]] = []
    for n, text in enumerate(texts):
        answers.append(await link.conn.send_request("channel.inbound", {
            "binding_id": link.binding_id, "msg_id": f"q{n}", "text": text,
            "sender": {"user_id": "u-alice", "name": "alice", "is_bot": False}}, timeout=60))
    outbox = hub.state.outboxes.for_binding(link.binding_id)
    await until(lambda: hub.state is not None and hub.state.runs.ended["final"] == 80, WAIT)
    assert outbox.unacked >= 80  # every answer made, none acked
    await until(lambda: hub_side.queued + 200_000 > limit, WAIT)  # the link's queue is full

    assert outbox.waiting >= 80 - hub.config.deliver_window  # the rest wait in the outbox
    assert hub_side.peak_queued <= limit

    link.ws._writer.transport.resume_reading()  # type: ignore[union-attr]
    finals = []
    while len(finals) < 80:
        delivery = await next_item(link.delivers, WAIT)
        if delivery["kind"] == "final":
            finals.append(delivery["text"])
    assert finals == [f"{text} " + "z" * 190_000 for text in texts]  # nothing lost, in order
    await asyncio.wait_for(asyncio.gather(*answers), WAIT)
    await until(lambda: outbox.unacked == 0, WAIT)
    assert hub_side.peak_queued <= limit
