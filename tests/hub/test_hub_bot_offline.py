"""A bot gone mid-reply (issue 12, hole 7): the chat hears it within the reconnect grace,
not after `run_timeout_ms` — unless the bot comes back and continues the run.

`run_timeout_ms` is ten minutes in every test here, so only the offline rule can end a run
within the few seconds a test waits.
"""

from __future__ import annotations

import aiohttp
import pytest
from hub_clients import StartHub, TestBot, TestLink, next_item, nothing_in, until

from bridge.hub import Hub

NEVER = 600_000
"""A run timeout no test waits for."""


async def start_run(http: aiohttp.ClientSession, hub: Hub, version: int = 3
                    ) -> tuple[TestBot, TestLink]:
    """Helper takes a message and streams a first piece of its reply."""
    helper = await TestBot.connect(http, hub, name="Helper", protocol_version=version)
    link = await TestLink.connect(http, hub)
    await link.inbound("write me an essay", "m1")
    await next_item(helper.sends)
    await helper.event("run-1", "delta", "Once upon ")
    assert (await next_item(link.delivers))["text"] == "Once upon "
    return helper, link


def offline(hub: Hub) -> bool:
    return hub.health()["bots_online"] == 0


async def test_a_bot_gone_mid_reply_ends_its_run_with_an_error(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub(run_timeout_ms=NEVER, run_reconnect_grace_seconds=0.2)
    helper, link = await start_run(http, hub)
    await helper.vanish()
    notice = await next_item(link.delivers)
    assert (notice["kind"], notice["run_id"], notice["seq"]) == ("error", "run-1", 2)
    assert notice["text"] == "Helper went offline mid-reply."
    assert notice["source_msg_id"] == "m1" and notice["sender"]["name"] == "Helper"
    assert hub.health()["runs_running"] == 0
    assert await nothing_in(link.delivers)


async def test_a_bot_whose_heartbeat_expires_mid_reply_is_reported_too(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub(run_timeout_ms=NEVER, run_reconnect_grace_seconds=0.1,
                          bot_ttl_seconds=0.3, sweep_interval_seconds=0.05)
    _helper, link = await start_run(http, hub)  # then silent: no heartbeat, no event
    notice = await next_item(link.delivers)
    assert (notice["kind"], notice["text"]) == ("error", "Helper went offline mid-reply.")


@pytest.mark.parametrize("version", [2, 3])
async def test_a_bot_that_comes_back_and_continues_its_run_is_not_cut_off(
    http: aiohttp.ClientSession, start_hub: StartHub, version: int
) -> None:
    """The BCN server's own client queues run events while disconnected (tests/interop)."""
    grace = 1.0
    hub = await start_hub(run_timeout_ms=NEVER, run_reconnect_grace_seconds=grace)
    helper, link = await start_run(http, hub, version)
    await helper.vanish()
    await until(lambda: offline(hub))
    back = await TestBot.connect(http, hub, token=helper.token, protocol_version=version)
    back.adopt(helper)
    await back.event("run-1", "delta", "a time")
    await back.final("run-1", "Once upon a time")
    rest = await link.deliveries_until_final()
    assert [(d["kind"], d["text"], d["seq"]) for d in rest] == [
        ("delta", "a time", 2), ("final", "Once upon a time", 3)]
    assert await nothing_in(link.delivers, settle=grace + 0.3)  # and no error after the grace
    assert await nothing_in(back.refusals, settle=0)


async def test_a_bot_that_comes_back_but_lost_its_run_gets_an_abort(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    """This SDK cancels its runs when its connection drops: back, but silent on the run."""
    hub = await start_hub(run_timeout_ms=NEVER, run_reconnect_grace_seconds=0.3)
    helper, link = await start_run(http, hub, version=2)
    await helper.vanish()
    await until(lambda: offline(hub))
    back = await TestBot.connect(http, hub, token=helper.token, protocol_version=2)
    notice = await next_item(link.delivers)
    assert (notice["kind"], notice["run_id"]) == ("error", "run-1")
    abort = await next_item(back.aborts)
    assert abort.params == {"session_key": "grp", "run_id": "run-1"}
    await back.final("run-1", "too late")  # the chat was told it failed: dropped, logged
    assert await nothing_in(link.delivers)


async def test_a_stopping_hub_leaves_its_runs_to_the_next_start(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    """Closing every bot on stop is not the bots going away: the next start reports the run
    as interrupted by the restart, once, rather than as its bot gone offline."""
    timings = {"run_timeout_ms": NEVER, "run_reconnect_grace_seconds": 0,
               "reconnect_grace_seconds": 0.2}
    hub = await start_hub(**timings)
    await start_run(http, hub)
    await hub.stop()
    hub = await start_hub(**timings)
    link = await TestLink.connect(http, hub)
    notice = await next_item(link.delivers)
    assert (notice["kind"], notice["run_id"]) == ("error", "run-1")
    assert "restarted" in notice["text"]
    assert await nothing_in(link.delivers)
