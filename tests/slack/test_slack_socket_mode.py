"""Socket Mode through slack_sdk's client: hello, acks, reconnects, and start failures."""

from __future__ import annotations

import logging

import pytest
from slack_support import ADA, CHANNEL, SECRETS, MakeAdapter, Sink, account_config

from adapters.slack import SlackAdapter
from adapters.slack.errors import SlackStartError
from tests.fakes.slack import FakeSlack


async def test_start_opens_one_connection_and_every_envelope_is_acked(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    await make_adapter()
    deliveries = [await fake.push(fake.human_message(CHANNEL, ADA, f"m{n}")) for n in range(3)]

    await sink.wait_for(3)
    for delivery in deliveries:
        await fake.acked(delivery)

    assert fake.connections_opened == 1 and fake.connected == 1
    assert [call.token for call in fake.calls_to("apps.connections.open")] == [fake.app_token]
    assert sink.texts() == ["m0", "m1", "m2"]
    assert len(fake.calls_to("auth.test")) == 1  # Bolt knows the app from the adapter's call


@pytest.mark.parametrize("interruption", ["disconnect", "drop"])
async def test_a_new_connection_is_opened_when_slack_asks_or_the_old_one_drops(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink, interruption: str
) -> None:
    await make_adapter()

    if interruption == "disconnect":
        await fake.disconnect("refresh_requested")  # as Slack does every few hours
    else:
        await fake.drop_connections()
    await fake.wait_until(lambda: fake.sockets_opened == 2 and fake.connected == 1)
    await fake.push(fake.human_message(CHANNEL, ADA, f"after the {interruption}"))

    [inbound] = await sink.wait_for(1)
    assert inbound.text == f"after the {interruption}"
    assert fake.connections_opened == 2  # a fresh ticket from apps.connections.open


async def test_events_sent_while_disconnected_arrive_after_the_reconnect(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    await make_adapter()
    await fake.drop_connections()

    delivery = await fake.push(fake.human_message(CHANNEL, ADA, "queued by Slack"))

    [inbound] = await sink.wait_for(1)
    await fake.acked(delivery)
    assert inbound.text == "queued by Slack"
    assert fake.connections_opened == 2


@pytest.mark.parametrize("which", ["bot_token", "app_token"])
async def test_a_rejected_token_stops_the_start_with_one_clear_line(
    fake: FakeSlack, which: str
) -> None:
    wrong = {"bot_token": "xoxb-9999-wrong-token", "app_token": "xapp-1-AWRONG-wrong-token"}
    adapter = SlackAdapter("main", account_config(fake, **{which: wrong[which]}), Sink())

    with pytest.raises(SlackStartError) as raised:
        await adapter.start()

    message = str(raised.value)
    assert f"check accounts.slack.main.{which}" in message
    assert raised.value.__cause__ is None and raised.value.__context__ is None
    for secret in (*SECRETS, wrong[which]):
        assert secret not in message
    assert fake.connected == 0
    await adapter.stop()


async def test_slack_unreachable_at_start_is_a_start_error(fake: FakeSlack) -> None:
    adapter = SlackAdapter("main", account_config(fake), Sink())
    await fake.stop()

    with pytest.raises(SlackStartError, match=r"auth\.test failed"):
        await adapter.start()
    await adapter.stop()


async def test_an_exported_slack_bot_token_does_not_make_bolt_complain(
    fake: FakeSlack, make_adapter: MakeAdapter, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", fake.bot_token)  # as docs/slack.md suggests
    caplog.set_level(logging.WARNING)

    await make_adapter()

    assert [r.getMessage() for r in caplog.records if r.name.startswith("slack_bolt")] == []


@pytest.mark.slow  # slack_sdk retries a failed reconnect every ping_interval
async def test_an_outage_while_reconnecting_delays_events_and_loses_none(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    await make_adapter(ping_interval=2)
    fake.fail("apps.connections.open", "internal_error", status=500, times=2)

    await fake.drop_connections()
    delivery = await fake.push(fake.human_message(CHANNEL, ADA, "through the outage"))

    [inbound] = await sink.wait_for(1)
    await fake.acked(delivery)
    assert inbound.text == "through the outage"
    assert len(fake.calls_to("apps.connections.open")) >= 4  # start, two refused, then one
    lost = [r for r in caplog.records if "lost its Socket Mode connection" in r.getMessage()]
    back = [r for r in caplog.records if "connected again after" in r.getMessage()]
    assert len(lost) == 1 and lost[0].levelno == logging.WARNING
    assert len(back) == 1
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
