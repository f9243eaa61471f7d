"""Long polling keeps going through Bot API outages and says so once per outage."""

from __future__ import annotations

import logging

import pytest
from telegram_support import GROUP, TOKEN, MakeAdapter, Received

from tests.fakes.telegram import FakeTelegram, user

ALICE = user("Alice", user_id=501)


@pytest.mark.slow  # PTB pauses 1 s, then 1.5 s, between failed polls
async def test_polling_survives_dropped_connections(
    fake: FakeTelegram,
    make_adapter: MakeAdapter,
    received: Received,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="adapters.telegram")
    await make_adapter()
    fake.drop_next("getUpdates", times=2)  # the two polls after the pending one
    fake.push_message(TOKEN, GROUP, ALICE, "before the outage")
    await received.next()
    fake.push_message(TOKEN, GROUP, ALICE, "during the outage")

    inbound = await received.next(timeout=10)

    assert inbound.text == "during the outage"
    lost = [r for r in caplog.records if "lost contact" in r.getMessage()]
    back = [r for r in caplog.records if "polling works again" in r.getMessage()]
    assert len(lost) == 1 and lost[0].levelno == logging.WARNING
    assert len(back) == 1 and "2 failed attempt" in back[0].getMessage()
    assert TOKEN.partition(":")[2] not in caplog.text


@pytest.mark.slow  # PTB pauses 1 s after a failed poll
async def test_polling_survives_server_errors(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received
) -> None:
    await make_adapter()
    fake.fail_next("getUpdates", status=502, description="Bad Gateway")
    fake.push_message(TOKEN, GROUP, ALICE, "before")
    await received.next()
    fake.push_message(TOKEN, GROUP, ALICE, "after a 502")

    assert (await received.next(timeout=10)).text == "after a 502"


async def test_messages_queued_while_stopped_arrive_after_restart(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received
) -> None:
    first = await make_adapter()
    await first.stop()
    fake.push_message(TOKEN, GROUP, ALICE, "sent while the bridge was down")

    await make_adapter()

    assert (await received.next()).text == "sent while the bridge was down"
    assert [item.text for item in received.items] == ["sent while the bridge was down"]
