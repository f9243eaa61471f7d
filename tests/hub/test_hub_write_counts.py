"""What one message costs `hub.db`, counted — never timed (issue 37).

A human message answered by a bot's final, one at a time through a real hub, a raw bot and
a raw link: the statements the hub commits per round trip, the transactions they take, and
that the per-message tables grow at their ends (append-only, `append_log.py`). A change that
adds a statement to the hot path, or a commit, fails here; bench/hub_overhead.py prints what
it costs in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path

import aiohttp
from hub_clients import StartHub, TestBot, TestLink, binding

from bridge.hub import Hub
from bridge.hub.append_log import TRIM_BATCH

ROUND_TRIPS = 20


async def round_trips(link: TestLink, count: int, prefix: str) -> None:
    for n in range(count):
        await link.inbound(f"{prefix} {n}", f"{prefix}-{n}")
        await link.deliveries_until_final()


def writes_of(hub: Hub) -> tuple[int, int, int]:
    assert hub.state is not None
    writes = hub.state.db.writes
    return writes.committed, writes.transactions, writes.superseded


async def settled(hub: Hub) -> None:
    """Until the lazy writes of the last round trip are committed too."""
    assert hub.state is not None
    writes = hub.state.db.writes
    async with asyncio.timeout(5):
        while writes.pending:
            await asyncio.sleep(0.01)


async def test_a_round_trip_commits_seven_statements_in_two_transactions(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub()
    helper = await TestBot.connect(http, hub, name="Helper", protocol_version=2)
    helper.reply = lambda text: f"re: {text}"
    link = await TestLink.connect(http, hub)
    await round_trips(link, 3, "warm")
    await settled(hub)
    committed, transactions, superseded = writes_of(hub)

    await round_trips(link, ROUND_TRIPS, "counted")
    await settled(hub)
    committed2, transactions2, superseded2 = writes_of(hub)

    # Accepted msg_id, the person's line, the run's row: with the answer to the link.
    # The bot's line, the delivery, the run's row deleted (its id, written lazily after the
    # ACK, superseded by that delete): before the delivery goes out. The delivery's row
    # deleted once the link acks it: lazily, with the next message's commit.
    assert committed2 - committed == 7 * ROUND_TRIPS
    assert superseded2 - superseded == ROUND_TRIPS
    # Two commits a round trip: the message accepted, the reply about to be delivered.
    assert transactions2 - transactions <= 2 * ROUND_TRIPS + 1


async def test_transcript_lines_and_accepted_ids_are_appended_in_order(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub()
    helper = await TestBot.connect(http, hub, name="Helper")
    helper.reply = lambda text: f"re: {text}"
    links = [await TestLink.connect(http, hub, binding(f"room-{n}")) for n in range(3)]
    for n in range(4):
        for link in links:  # the chats take turns: a keyed table would interleave them
            await round_trips(link, 1, f"r{n}")
    await settled(hub)
    assert hub.state is not None
    with contextlib.closing(sqlite3.connect(Path(hub.state.db.path))) as db:
        lines = db.execute("SELECT id, session_id FROM transcript_lines").fetchall()
        accepted = db.execute("SELECT id, msg_id FROM accepted_log").fetchall()
    # In the table's own order (its key), rows are in the order they were written: each
    # insert went to the table's end, whichever chat it belongs to.
    assert [msg for _, msg in accepted] == [f"r{n}-0" for n in range(4) for _ in links]
    sessions = [session for _, session in lines]  # two lines a round trip, chats in turn
    assert sessions == [session for session in sessions[:6:2] for _ in range(2)] * 4
    assert len(set(sessions)) == 3


async def test_rows_past_their_bound_are_deleted_in_batches_while_the_hub_runs(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub(transcript_limit=2, dedup_limit=2)
    helper = await TestBot.connect(http, hub, name="Helper")
    helper.reply = lambda text: f"re: {text}"
    link = await TestLink.connect(http, hub)
    trips = TRIM_BATCH // 2 + 10  # two lines a round trip: one batch of evicted lines
    await round_trips(link, trips, "many")
    await settled(hub)
    assert hub.state is not None
    with contextlib.closing(sqlite3.connect(Path(hub.state.db.path))) as db:
        lines = db.execute("SELECT COUNT(*) FROM transcript_lines").fetchone()[0]
        accepted = db.execute("SELECT COUNT(*) FROM accepted_log").fetchone()[0]
    assert lines == 2 * trips - TRIM_BATCH  # the evicted lines of one full batch are gone
    assert accepted == trips  # fewer evicted ids than a batch: none deleted yet
