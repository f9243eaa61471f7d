"""`hub.db` migrations of the hot tables keep what was stored, in order: deliveries in one
b-tree (6; a new one goes after every kept one, also after a restart), transcripts and
accepted msg_ids as append-only logs (7)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path

from bridge.hub.delivery_rows import DeliveryRows
from bridge.hub.storage import HUB_MIGRATIONS, HubDatabase
from bridge.store.sqlite.connection import connect
from bridge.store.sqlite.migrations import migrate


def kept(path: Path) -> list[tuple[str, object]]:
    hub_db = HubDatabase(path)
    try:
        return [(d.event_id, d.params) for d in DeliveryRows(hub_db).load().get("bnd", [])]
    finally:
        hub_db.close()


async def test_deliveries_of_a_version_5_file_are_kept_in_order(tmp_path: Path) -> None:
    path = tmp_path / "hub.db"
    with contextlib.closing(connect(str(path))) as db:
        migrate(db, tuple(m for m in HUB_MIGRATIONS if m.version <= 5))
        for n, event_id in enumerate(["evt-c", "evt-a", "evt-b"]):
            db.execute("INSERT INTO deliveries (event_id, binding_id, params, created_at)"
                       " VALUES (?, 'bnd', ?, 1.0)", (event_id, f'{{"n": {n}}}'))
        db.execute("DELETE FROM deliveries WHERE event_id = 'evt-a'")  # a gap in the ids
    assert kept(path) == [("evt-c", {"n": 0}), ("evt-b", {"n": 2})]

    hub_db = HubDatabase(path)
    try:
        DeliveryRows(hub_db).saved("bnd", "evt-new", {"n": 3}, asyncio.get_running_loop().time())
    finally:
        hub_db.close()  # commits what is queued
    assert kept(path) == [("evt-c", {"n": 0}), ("evt-b", {"n": 2}), ("evt-new", {"n": 3})]
    with contextlib.closing(sqlite3.connect(path)) as db:
        objects = {row[0] for row in db.execute(
            "SELECT name FROM sqlite_master WHERE name LIKE '%deliver%'")}
    assert objects == {"deliveries"}  # one b-tree: no index, no sqlite_sequence row for it


def test_transcripts_and_accepted_ids_of_a_version_6_file_keep_their_order(
        tmp_path: Path) -> None:
    path = tmp_path / "hub.db"
    with contextlib.closing(connect(str(path))) as db:
        migrate(db, tuple(m for m in HUB_MIGRATIONS if m.version <= 6))
        for session, seq in [("s-b", 1), ("s-a", 0), ("s-b", 0), ("s-a", 1)]:
            db.execute("INSERT INTO transcripts (session_id, seq, entry) VALUES (?, ?, ?)",
                       (session, seq, f'"{session}{seq}"'))
        for binding, seq in [("b2", 0), ("b1", 1), ("b1", 0)]:
            db.execute("INSERT INTO accepted_msgs (binding_id, seq, msg_id, session_id)"
                       " VALUES (?, ?, ?, 's')", (binding, seq, f"{binding}-{seq}"))
        migrate(db, HUB_MIGRATIONS)
        lines = db.execute("SELECT session_id, entry FROM transcript_lines ORDER BY id")
        accepted = db.execute("SELECT binding_id, msg_id FROM accepted_log ORDER BY id")
        assert lines.fetchall() == [("s-a", '"s-a0"'), ("s-a", '"s-a1"'),
                                    ("s-b", '"s-b0"'), ("s-b", '"s-b1"')]
        assert accepted.fetchall() == [("b1", "b1-0"), ("b1", "b1-1"), ("b2", "b2-0")]
        old = db.execute("SELECT name FROM sqlite_master WHERE name IN"
                         " ('transcripts', 'accepted_msgs')").fetchall()
        assert old == []
