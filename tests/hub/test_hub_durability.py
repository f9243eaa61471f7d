"""What a hub restart must not lose (issue 12, hole 6), over real sockets and a real hub.db.

Each test stops a hub and starts a new one on the same data_dir: un-acked deliveries are
replayed with their event ids, bounds hold across the restart, transcripts answer
channel.history, runs in flight are ended with a word (or continued by their bot). The kill -9
versions of these are in tests/faults/test_hub_restart.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hub_clients import WAIT, StartHub, TestBot, TestLink, next_item, nothing_in

from bridge.hub import Hub

QUICK_RESTART = {"run_timeout_ms": 600_000, "reconnect_grace_seconds": 0.3,
                 "run_reconnect_grace_seconds": 0.1}
"""Runs never time out; the reconnect graces after a restart are short."""


def rows(hub: Hub, table: str) -> int:
    """Rows in a hub.db table, read through a connection of its own (as an operator would)."""
    assert hub.state is not None
    path = Path(hub.state.db.path)
    with contextlib.closing(sqlite3.connect(path)) as db:
        return int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


async def stored_rows(hub: Hub, table: str, count: int) -> None:
    """Until `table` holds `count` rows. What changes it arrives when a peer sends it (an
    ack, a bot's output: fire and forget) and is written in batches, so flush and look
    again until it shows, rather than sleep for a guess and assert."""
    assert hub.state is not None
    async with asyncio.timeout(WAIT):
        while True:
            await hub.state.db.writes.flush()
            if rows(hub, table) == count:
                return
            await asyncio.sleep(0.01)


async def test_unacked_deliveries_are_replayed_after_a_restart_with_their_event_ids(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub()
    helper = await TestBot.connect(http, hub, name="Helper")
    link = await TestLink.connect(http, hub)
    link.hold = True  # the link gets every output but never acks one
    await link.inbound("go", "m1")
    await next_item(helper.sends)
    await helper.event("run-1", "delta", "one ")
    await helper.event("run-1", "delta", "two")
    await helper.final("run-1", "one two")
    seen = [await next_item(link.delivers) for _ in range(3)]
    await hub.stop()
    link.release()

    hub = await start_hub()
    again = await TestLink.connect(http, hub)
    assert again.payload["pending_deliveries"] == 3
    replayed = [await next_item(again.delivers) for _ in range(3)]
    assert replayed == seen  # the same event ids, the same outputs, the same order
    assert await nothing_in(again.delivers)
    await stored_rows(hub, "deliveries", 0)  # every ack's deletion committed


async def test_acked_deliveries_are_not_replayed(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub()
    helper = await TestBot.connect(http, hub, name="Helper")
    helper.reply = lambda text: f"re: {text}"
    link = await TestLink.connect(http, hub)
    await link.inbound("hello", "m1")
    assert [d["text"] for d in await link.deliveries_until_final()] == ["re: hello"]
    await hub.stop()
    hub = await start_hub()
    again = await TestLink.connect(http, hub)
    assert again.payload["pending_deliveries"] == 0
    assert await nothing_in(again.delivers)


async def left_undelivered(
    http: aiohttp.ClientSession, start_hub: StartHub, deltas: list[str], final: str
) -> None:
    """A hub stopped with these outputs of Helper's run-1 made while no link was there."""
    hub = await start_hub()
    helper = await TestBot.connect(http, hub, name="Helper")
    link = await TestLink.connect(http, hub)
    await link.inbound("go on", "m1")
    await next_item(helper.sends)
    await link.close()  # nobody takes the outputs now
    for text in deltas:
        await helper.event("run-1", "delta", text)
    await helper.final("run-1", final)
    await stored_rows(hub, "deliveries", len(deltas) + 1)  # every output stored
    await hub.stop()


async def test_bounds_hold_across_a_restart_oldest_dropped_with_a_log_line(
    http: aiohttp.ClientSession, start_hub: StartHub, caplog: pytest.LogCaptureFixture
) -> None:
    await left_undelivered(http, start_hub, ["a", "b", "c", "d"], "abcd")
    caplog.set_level(logging.WARNING, logger="bridge.hub.deliveries")
    hub = await start_hub(pending_max_per_binding=2)
    again = await TestLink.connect(http, hub)
    assert again.payload["pending_deliveries"] == 2
    kept = [await next_item(again.delivers) for _ in range(2)]
    assert [(d["kind"], d["text"]) for d in kept] == [("delta", "d"), ("final", "abcd")]
    dropped = [r for r in caplog.records if "over 2 waiting" in r.getMessage()]
    assert len(dropped) == 3
    await again.close()
    await hub.stop()

    hub = await start_hub(pending_max_age_seconds=0.01)
    assert hub.state is not None and rows(hub, "deliveries") == 0  # acked before the stop


async def test_outputs_older_than_the_age_bound_are_dropped_on_start(
    http: aiohttp.ClientSession, start_hub: StartHub, caplog: pytest.LogCaptureFixture
) -> None:
    await left_undelivered(http, start_hub, [], "too late")
    await asyncio.sleep(0.2)  # older than the next hub's 0.1 s bound

    caplog.set_level(logging.WARNING, logger="bridge.hub.deliveries")
    hub = await start_hub(pending_max_age_seconds=0.1)
    again = await TestLink.connect(http, hub)
    assert again.payload["pending_deliveries"] == 0
    assert any("undelivered for over" in r.getMessage() for r in caplog.records)
    assert await nothing_in(again.delivers)


async def test_transcripts_answer_history_after_a_restart(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub(transcript_limit=4)
    helper = await TestBot.connect(http, hub, name="Helper")
    helper.reply = lambda text: f"re: {text}"
    link = await TestLink.connect(http, hub)
    first = await link.inbound("hello", "m1")
    await link.deliveries_until_final()
    await link.conn.request("channel.session.reset", {"binding_id": link.binding_id})
    second = await link.inbound("one", "m2")
    await link.deliveries_until_final()
    for n, text in enumerate(("two", "three"), start=3):
        await link.inbound(text, f"m{n}")
        await link.deliveries_until_final()
    await hub.stop()

    hub = await start_hub(transcript_limit=4)
    again = await TestLink.connect(http, hub)

    async def history(result: dict[str, Any]) -> list[tuple[str, str, str]]:
        answer = await again.conn.request("channel.history",
                                          {"bcs_session_id": result["bcs_session_id"]})
        return [(m["role"], m["name"], m["text"]) for m in answer["messages"]]

    assert await history(first) == [("user", "alice", "hello"),
                                    ("assistant", "Helper", "re: hello")]  # a reset session
    assert await history(second) == [  # the active one: its last 4 lines
        ("user", "alice", "two"), ("assistant", "Helper", "re: two"),
        ("user", "alice", "three"), ("assistant", "Helper", "re: three")]
    # 2 + the bound of 4: a start deletes the rows read back past a session's bound
    assert rows(hub, "transcript_lines") == 2 + 4
    after = await again.inbound("four", "m5")  # the active session goes on after the restart
    assert after["bcs_session_id"] == second["bcs_session_id"]


async def test_a_run_in_flight_at_a_restart_is_reported_interrupted(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub(**QUICK_RESTART)
    helper = await TestBot.connect(http, hub, name="Helper")
    link = await TestLink.connect(http, hub)
    await link.inbound("long job", "m1")
    await next_item(helper.sends)
    await helper.event("run-1", "delta", "working")
    assert (await next_item(link.delivers))["seq"] == 1
    await hub.stop()

    hub = await start_hub(**QUICK_RESTART)
    again = await TestLink.connect(http, hub)
    notice = await next_item(again.delivers)
    assert (notice["kind"], notice["run_id"], notice["seq"]) == ("error", "run-1", 2)
    assert notice["source_msg_id"] == "m1" and notice["sender"]["name"] == "Helper"
    assert "interrupted" in notice["text"] and "restarted" in notice["text"]
    assert hub.health()["runs_running"] == 0
    assert await nothing_in(again.delivers)


async def test_a_send_unacknowledged_at_a_restart_is_reported_too(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub(**QUICK_RESTART)
    helper = await TestBot.connect(http, hub, name="Helper")
    helper.ack_delay = 30  # the chat.send is on the wire, its ACK never comes
    link = await TestLink.connect(http, hub)
    await link.inbound("are you there", "m1")
    key = (await next_item(helper.sends)).params["idempotency_key"]
    await hub.stop()

    hub = await start_hub(**QUICK_RESTART)
    again = await TestLink.connect(http, hub)
    notice = await next_item(again.delivers)
    assert (notice["kind"], notice["run_id"], notice["source_msg_id"]) == ("error", key, "m1")
    assert "interrupted" in notice["text"]


async def test_a_run_its_bot_continues_after_the_restart_is_not_cut_off(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    """A bot that queued its events while the hub was away (the BCN server's own client
    does) sends them after reconnecting; the restored run takes them."""
    timings = {"run_timeout_ms": 600_000, "reconnect_grace_seconds": 2,
               "run_reconnect_grace_seconds": 0.1}
    hub = await start_hub(**timings)
    helper = await TestBot.connect(http, hub, name="Helper", protocol_version=2)
    link = await TestLink.connect(http, hub)
    await link.inbound("stream it", "m1")
    await next_item(helper.sends)
    await helper.event("run-1", "delta", "part one, ")
    assert (await next_item(link.delivers))["text"] == "part one, "
    await hub.stop()

    hub = await start_hub(**QUICK_RESTART)
    again = await TestLink.connect(http, hub)
    back = await TestBot.connect(http, hub, token=helper.token, protocol_version=2)
    await back.event("run-1", "delta", "part two")
    await back.final("run-1", "part one, part two")
    rest = await again.deliveries_until_final()
    assert [(d["kind"], d["text"], d["seq"]) for d in rest] == [
        ("delta", "part two", 2), ("final", "part one, part two", 3)]
    assert await nothing_in(again.delivers, settle=0.3)  # no "interrupted" after the grace


async def test_a_burst_of_deliveries_is_persisted_in_batches(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    """Every output is written before it is sent; printed: what that costs per delivery."""
    burst = 2000
    helper = await TestBot.connect(http, hub, name="Helper")
    link = await TestLink.connect(http, hub)
    await link.inbound("burst", "m1")
    await next_item(helper.sends)
    assert hub.state is not None
    writes = hub.state.db.writes
    before = (writes.committed, writes.transactions, writes.busy)
    for n in range(burst):
        await helper.event("run-1", "delta", f"w{n} ")
    got = [await next_item(link.delivers) for _ in range(burst)]
    assert [d["seq"] for d in got] == list(range(1, burst + 1))
    await stored_rows(hub, "deliveries", 0)  # every acked one deleted again
    statements = writes.committed - before[0]
    transactions = writes.transactions - before[1]
    busy = writes.busy - before[2]
    print(f"\nburst of {burst} deliveries: {statements} statements in {transactions} "
          f"transactions, {busy / burst * 1e6:.1f} µs of database time per delivery "
          f"(insert, run progress, delete), longest transaction {writes.longest * 1000:.2f} ms")
    assert transactions < statements  # batched, not one commit each


async def test_unreadable_stored_rows_are_left_out_with_a_log_line_not_a_crash(
    http: aiohttp.ClientSession, start_hub: StartHub, caplog: pytest.LogCaptureFixture
) -> None:
    await left_undelivered(http, start_hub, ["spoilt", "kept"], "kept too")
    hub = await start_hub()  # once more to read the path, then corrupt the file by hand
    assert hub.state is not None
    path = hub.state.db.path
    await hub.stop()
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("UPDATE deliveries SET params = '{not json' WHERE ord ="
                   " (SELECT MIN(ord) FROM deliveries)")
        db.execute("INSERT INTO transcript_lines (session_id, entry) SELECT session_id,"
                   " 'garbage' FROM channel_sessions")
        db.commit()

    caplog.set_level(logging.ERROR)
    hub = await start_hub()
    again = await TestLink.connect(http, hub)
    assert again.payload["pending_deliveries"] == 2  # the spoilt one is dropped, logged
    texts = [(await next_item(again.delivers))["text"] for _ in range(2)]
    assert texts == ["kept", "kept too"]
    assert "is unreadable" in caplog.text and "unreadable stored value" in caplog.text


async def test_a_message_resent_after_a_restart_is_a_duplicate_not_a_second_run(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    """A bridge that never saw the hub's answer (the hub crashed) sends the message again."""
    hub = await start_hub(dedup_limit=3)
    helper = await TestBot.connect(http, hub, name="Helper")
    helper.reply = lambda text: f"re: {text}"
    link = await TestLink.connect(http, hub)
    first = await link.inbound("only once", "m-once")
    await link.deliveries_until_final()
    for n in range(4):  # past the bound: the oldest accepted ids are forgotten, on disk too
        await link.inbound(f"more {n}", f"m-more-{n}")
        await link.deliveries_until_final()
    await hub.stop()

    hub = await start_hub(dedup_limit=3)
    helper = await TestBot.connect(http, hub, token=helper.token)
    helper.reply = lambda text: f"re: {text}"
    again = await TestLink.connect(http, hub)
    resent = await again.inbound("more 3", "m-more-3")
    assert resent["duplicate"] is True and resent["deliveries"] == []
    # The bound of 3: a start deletes the rows read back past a binding's bound
    assert rows(hub, "accepted_log") == 3
    forgotten = await again.inbound("only once", "m-once")  # beyond the bound: new again
    assert forgotten["duplicate"] is False
    assert first["bcs_session_id"] == resent["bcs_session_id"]
