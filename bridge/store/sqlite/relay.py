"""The relay's concerns in SQLite (tables from migrations 2-6)."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from bridge.fastjson import dumps, loads
from bridge.store.leases import Lease, LeaseStore, StaleLease, wall_clock
from bridge.store.loop_guard import (
    HeldLane,
    LaneGuard,
    LoopGuardStore,
    Posted,
    Released,
    Verdict,
    guard_turn,
)
from bridge.store.micros import from_micros, to_micros
from bridge.store.relay import (
    MessageMapStore,
    OutboxItem,
    OutboxStore,
    SeenStore,
    SpoolEntry,
    SpoolStore,
)
from bridge.store.sqlite.connection import write_soon, write_step
from bridge.store.streams import StreamStore


class SqliteSeenStore(SeenStore):
    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    async def add(self, key: str, now: datetime) -> bool:
        async with write_step(self._db, one_statement=True):
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO seen_keys (key, seen_at) VALUES (?, ?)",
                (key, to_micros(now)),
            )
        return cursor.rowcount == 1

    async def note(self, key: str, now: datetime) -> bool:
        cursor = write_soon(self._db,
                            "INSERT OR IGNORE INTO seen_keys (key, seen_at) VALUES (?, ?)",
                            (key, to_micros(now)))
        return cursor.rowcount == 1

    async def claim(self, key: str, holder: str, now: datetime, ttl: float) -> bool:
        # One statement, written without waiting for its commit: until that commit this
        # connection holds the file's write lock, so another process's claim of the key
        # waits for it and then finds the row; a crash before it loses only a claim, which
        # lets the redelivery through sooner — what an expired claim does anyway.
        at = to_micros(now)
        cursor = write_soon(self._db, _CLAIM, (key, holder, at + round(ttl * 1_000_000), at))
        return cursor.rowcount == 1

    async def release(self, key: str, holder: str) -> None:
        write_soon(self._db, "DELETE FROM seen_claims WHERE key = ? AND holder = ?",
                   (key, holder))

    async def claimant(self, key: str) -> str | None:
        row = self._db.execute(_CLAIMANT, (key,)).fetchone()
        return None if row is None else str(row[0])

    async def take_over(self, key: str, dead: str, holder: str, now: datetime,
                        ttl: float) -> bool:
        at = to_micros(now)
        cursor = write_soon(self._db, _TAKE_OVER,
                            (key, dead, holder, at + round(ttl * 1_000_000)))
        return cursor.rowcount == 1

    async def has(self, key: str) -> bool:
        row = self._db.execute("SELECT 1 FROM seen_keys WHERE key = ?", (key,)).fetchone()
        return row is not None

    async def seen_at(self, keys: Sequence[str]) -> dict[str, datetime]:
        if not keys:
            return {}
        rows = self._db.execute(_seen_at_query(len(keys)), tuple(keys)).fetchall()
        return {key: from_micros(at) for key, at in rows}

    async def prune(self, before: datetime) -> int:
        async with write_step(self._db):
            cursor = self._db.execute(
                "DELETE FROM seen_keys WHERE seen_at < ?", (to_micros(before),)
            )
            # A claim on a seen key says nothing more, and `add` leaves it (one write per
            # message, not two): housekeeping clears those and the long expired ones.
            self._db.execute(
                "DELETE FROM seen_claims WHERE until < ?"
                " OR EXISTS (SELECT 1 FROM seen_keys WHERE seen_keys.key = seen_claims.key)",
                (to_micros(before),),
            )
        return cursor.rowcount


_CLAIM = (
    "INSERT INTO seen_claims (key, holder, until)"
    " SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM seen_keys WHERE key = ?1)"
    " ON CONFLICT (key) DO UPDATE SET holder = excluded.holder, until = excluded.until"
    " WHERE seen_claims.until <= ?4"
)
"""Take a key unless it is seen, or claimed by anyone until after `now` (?4): a new row,
or an expired claim's row taken over; either changes one row, a refusal none."""

_CLAIMANT = (
    "SELECT holder FROM seen_claims WHERE key = ?1"
    " AND NOT EXISTS (SELECT 1 FROM seen_keys WHERE key = ?1)"
)

_TAKE_OVER = (
    "UPDATE seen_claims SET holder = ?3, until = ?4 WHERE key = ?1 AND holder = ?2"
    " AND NOT EXISTS (SELECT 1 FROM seen_keys WHERE key = ?1)"
)
"""The dead claimant's row, moved to the new holder in one statement (compare and set)."""


_POINT_LOOKUPS = {
    count: " UNION ALL ".join(["SELECT key, seen_at FROM seen_keys WHERE key = ?"] * count)
    for count in range(1, 5)
}
"""`seen_at` for a few keys (a reply's two): point lookups glued with UNION ALL, since
`key IN (?, ?)` costs SQLite a temporary index of the list first, half again as much."""


def _seen_at_query(count: int) -> str:
    """More keys (a journal's batch) are one IN list: a compound SELECT stops at 500 terms."""
    return _POINT_LOOKUPS.get(count) or (
        f"SELECT key, seen_at FROM seen_keys WHERE key IN ({', '.join('?' * count)})"
    )


@functools.cache
def _pending_query(by_lane: bool, limited: bool) -> str:
    """The outbox read, built once per shape: every bot reply asks whether its lane is
    empty. The sent parts ride along in the same read (a JSON list per row, "[]" for none)."""
    return (
        "SELECT id, body, created_at, (SELECT json_group_array(json_array(idx, message_id))"
        " FROM outbox_parts WHERE item_id = outbox.id) FROM outbox"
        + (" WHERE lane = ?" if by_lane else "") + " ORDER BY id"
        + (" LIMIT ?" if limited else "")
    )


def _check_fence(db: sqlite3.Connection, fence: Lease | None) -> None:
    """Inside a write step: `StaleLease` if a newer grant of the fence's lease exists (the
    leases row keeps its token after an expiry or a release, so "newer" is never lost)."""
    if fence is None:
        return
    row = db.execute("SELECT token FROM leases WHERE name = ?", (fence.name,)).fetchone()
    if row is not None and row[0] > fence.token:
        raise StaleLease(fence, int(row[0]))


class SqliteOutboxStore(OutboxStore):
    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    async def append(
        self, item: OutboxItem, *, once: str | None = None, now: datetime | None = None
    ) -> int | None:
        body = item.to_body()
        created = to_micros(item.created_at) if item.created_at else None
        async with write_step(self._db):
            at = now or item.created_at or datetime.now(UTC)
            if once is not None and not _claim(self._db, once, at):
                return None
            cursor = self._db.execute(
                "INSERT INTO outbox (lane, body, created_at) VALUES (?, ?, ?)",
                (item.lane, dumps(body), created),
            )
        item.id = int(cursor.lastrowid or 0)
        return item.id

    async def pending(
        self, lane: str | None = None, limit: int | None = None
    ) -> list[OutboxItem]:
        args = [value for value in (lane, limit) if value is not None]
        items = []
        query = _pending_query(lane is not None, limit is not None)
        for row_id, body, created, sent in self._db.execute(query, args).fetchall():
            item = OutboxItem.from_body(
                loads(body), id=row_id,
                created_at=from_micros(created) if created is not None else None,
            )
            if sent != "[]":
                for index, message_id in loads(sent):
                    item.sent[index] = message_id
            items.append(item)
        return items

    async def lanes(self) -> list[str]:
        rows = self._db.execute("SELECT DISTINCT lane FROM outbox ORDER BY lane").fetchall()
        return [row[0] for row in rows]

    async def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM outbox").fetchone()[0])

    async def record_part(
        self,
        item_id: int,
        index: int,
        message_id: str,
        *,
        remember: Mapping[str, dict[str, Any]] | None = None,
        now: datetime | None = None,
        done: bool = False,
        fence: Lease | None = None,
    ) -> None:
        # A row per sent part, never a rewrite of the item's body: a reply of n parts costs
        # n small writes, not n rewrites of everything it says.
        at = to_micros(now or datetime.now(UTC))
        if index < 0:
            raise IndexError(f"outbox item {item_id} has no part {index}")
        async with write_step(self._db):
            _check_fence(self._db, fence)
            if done and self._db.execute(  # the common end: the item goes, its check with it
                "DELETE FROM outbox WHERE id = ? AND json_array_length(body, '$.parts') > ?",
                (item_id, index),
            ).rowcount:
                if index > 0:  # earlier parts were recorded as they went
                    self._db.execute("DELETE FROM outbox_parts WHERE item_id = ?", (item_id,))
            else:
                row = self._db.execute(
                    "SELECT json_array_length(body, '$.parts') FROM outbox WHERE id = ?",
                    (item_id,),
                ).fetchone()
                if row is not None:  # else: done with already (by another instance)
                    if index >= row[0]:
                        raise IndexError(f"outbox item {item_id} has no part {index}")
                    self._db.execute(
                        "INSERT OR REPLACE INTO outbox_parts (item_id, idx, message_id)"
                        " VALUES (?, ?, ?)", (item_id, index, message_id),
                    )
            for key, value in (remember or {}).items():
                self._db.execute(_PUT_MAP, (key, dumps(value), at))

    async def complete(self, item_id: int, *, fence: Lease | None = None) -> None:
        async with write_step(self._db):
            _check_fence(self._db, fence)
            self._db.execute("DELETE FROM outbox WHERE id = ?", (item_id,))
            self._db.execute("DELETE FROM outbox_parts WHERE item_id = ?", (item_id,))


def _claim(db: sqlite3.Connection, key: str, now: datetime) -> bool:
    """Remember a seen key inside the caller's transaction; False if it was seen already."""
    claimed = db.execute(
        "INSERT OR IGNORE INTO seen_keys (key, seen_at) VALUES (?, ?)", (key, to_micros(now))
    )
    return claimed.rowcount == 1


_PUT_MAP = (
    "INSERT INTO message_map (key, value, at) VALUES (?, ?, ?)"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value, at = excluded.at"
)


class SqliteMessageMapStore(MessageMapStore):
    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    async def put(self, key: str, value: dict[str, Any], now: datetime) -> None:
        async with write_step(self._db, one_statement=True):
            self._db.execute(_PUT_MAP, (key, dumps(value), to_micros(now)))

    async def get(self, key: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT value FROM message_map WHERE key = ?", (key,)).fetchone()
        return loads(row[0]) if row else None

    async def prune(self, before: datetime) -> int:
        async with write_step(self._db, one_statement=True):
            cursor = self._db.execute("DELETE FROM message_map WHERE at < ?", (to_micros(before),))
        return cursor.rowcount


class SqliteSpoolStore(SpoolStore):
    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    async def append(self, entry: SpoolEntry, *, once: str, now: datetime) -> int | None:
        body = {"lane": entry.lane, "binding": entry.binding, "params": entry.params}
        created = to_micros(entry.created_at or now)
        async with write_step(self._db):
            if not _claim(self._db, once, now):
                return None
            cursor = self._db.execute(
                "INSERT INTO spool (body, created_at) VALUES (?, ?)", (dumps(body), created)
            )
        entry.id = int(cursor.lastrowid or 0)
        return entry.id

    async def pending(self, limit: int = 100) -> list[SpoolEntry]:
        rows = self._db.execute(
            "SELECT id, body, created_at FROM spool ORDER BY id LIMIT ?", (limit,)
        ).fetchall()
        entries = []
        for row_id, body, created in rows:
            data = loads(body)
            entries.append(SpoolEntry(
                lane=data["lane"], binding=data["binding"], params=data["params"],
                created_at=from_micros(created) if created is not None else None, id=row_id,
            ))
        return entries

    async def complete(self, entry_id: int) -> None:
        async with write_step(self._db, one_statement=True):
            self._db.execute("DELETE FROM spool WHERE id = ?", (entry_id,))

    async def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM spool").fetchone()[0])


class SqliteLoopGuardStore(LoopGuardStore):
    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def _state(self, lane: str) -> LaneGuard | None:
        row = self._db.execute("SELECT state FROM loop_guard WHERE lane = ?", (lane,)).fetchone()
        return LaneGuard.from_json(loads(row[0])) if row else None

    def _save(self, lane: str, state: LaneGuard) -> None:
        self._db.execute(
            "INSERT INTO loop_guard (lane, state) VALUES (?, ?)"
            " ON CONFLICT (lane) DO UPDATE SET state = excluded.state",
            (lane, dumps(state.to_json())),
        )

    async def bot_spoke(
        self, lane: str, *, limit: int, window: float, now: datetime
    ) -> Verdict:
        async with write_step(self._db):
            state = self._state(lane) or LaneGuard()
            verdict = guard_turn(state, limit=limit, window=window, now=now.timestamp())
            self._save(lane, state)
        return verdict

    async def is_paused(self, lane: str) -> bool:
        state = self._state(lane)
        return state is not None and state.paused

    async def quiet(self, lane: str) -> bool:
        return self._db.execute(
            "SELECT 1 FROM loop_guard WHERE lane = ?"
            " UNION ALL SELECT 1 FROM outbox WHERE lane = ? LIMIT 1", (lane, lane)
        ).fetchone() is None

    async def hold(
        self, lane: str, item: OutboxItem, *, keep: int, once: str | None, now: datetime
    ) -> bool:
        async with write_step(self._db):
            if once is not None and not _claim(self._db, once, now):
                return False
            if self._held(lane) < keep:
                created = to_micros(item.created_at) if item.created_at else None
                self._db.execute(
                    "INSERT INTO loop_held (lane, body, created_at) VALUES (?, ?, ?)",
                    (lane, dumps(item.to_body()), created),
                )
            else:
                state = self._state(lane) or LaneGuard()
                state.held_over += 1
                self._save(lane, state)
        return True

    async def post(
        self,
        lane: str,
        item: OutboxItem,
        *,
        limit: int,
        window: float,
        keep: int,
        once: str | None,
        now: datetime,
        answers_human: bool = False,
    ) -> tuple[Posted, int | None]:
        async with write_step(self._db):
            if once is not None and not _claim(self._db, once, now):
                return "seen", None
            found = self._state(lane)
            state = found or LaneGuard()
            counted = not (answers_human and found is None)
            verdict = (guard_turn(state, limit=limit, window=window, now=now.timestamp())
                       if counted else "allow")
            created = to_micros(item.created_at) if item.created_at else None
            item_id = None
            if verdict == "allow":
                cursor = self._db.execute(
                    "INSERT INTO outbox (lane, body, created_at) VALUES (?, ?, ?)",
                    (item.lane, dumps(item.to_body()), created),
                )
                item_id = item.id = int(cursor.lastrowid or 0)
            elif self._held(lane) < keep:
                self._db.execute(
                    "INSERT INTO loop_held (lane, body, created_at) VALUES (?, ?, ?)",
                    (lane, dumps(item.to_body()), created),
                )
            else:
                state.held_over += 1
            if counted:
                self._save(lane, state)
        return verdict, item_id

    def _held(self, lane: str) -> int:
        return int(self._db.execute(
            "SELECT COUNT(*) FROM loop_held WHERE lane = ?", (lane,)
        ).fetchone()[0])

    async def human_spoke(self, lane: str) -> Released | None:
        state = self._state(lane)
        if state is None:
            return None  # the common case: no bot spoke here lately, nothing to write
        async with write_step(self._db):
            self._db.execute("DELETE FROM loop_guard WHERE lane = ?", (lane,))
            if not state.paused:
                return None
            rows = self._db.execute(
                "SELECT id, body, created_at FROM loop_held WHERE lane = ? ORDER BY id", (lane,)
            ).fetchall()
            items = []
            for _, body, created in rows:
                cursor = self._db.execute(
                    "INSERT INTO outbox (lane, body, created_at) VALUES (?, ?, ?)",
                    (lane, body, created),
                )
                items.append(OutboxItem.from_body(
                    loads(body), id=int(cursor.lastrowid or 0),
                    created_at=from_micros(created) if created is not None else None,
                ))
            self._db.execute("DELETE FROM loop_held WHERE lane = ?", (lane,))
        return Released(items, state.held_over)

    async def held_lanes(self) -> list[HeldLane]:
        # The partial index `loop_guard_paused` (migration 9) holds the paused lanes only;
        # the query repeats its WHERE so the planner reads that index, not every lane.
        rows = self._db.execute(
            "SELECT g.lane, g.state, (SELECT COUNT(*) FROM loop_held AS h WHERE h.lane = g.lane)"
            " FROM loop_guard AS g WHERE json_extract(g.state, '$.paused') ORDER BY g.lane"
        ).fetchall()
        return [
            HeldLane(lane, int(held), LaneGuard.from_json(loads(state)).held_over)
            for lane, state, held in rows
        ]


class SqliteStreamStore(StreamStore):
    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    """Deltas are rows of `run_deltas`; an ended run is one row with `seq` = `ENDED` (real
    seqs start at 1), so the mark needs no table of its own and is pruned with the rest."""

    ENDED = -1

    def _deltas(self, run_id: str) -> list[str]:
        rows = self._db.execute(
            "SELECT text FROM run_deltas WHERE run_id = ? ORDER BY seq", (run_id,)
        ).fetchall()
        return [row[0] for row in rows]

    def _text(self, run_id: str) -> str:
        return "".join(self._deltas(run_id))

    async def append(self, run_id: str, seq: int | None, text: str, now: datetime) -> str:
        async with write_step(self._db, one_statement=True):
            # One statement: the delta is kept only while the run has not ended; without a
            # seq it is numbered after the run's others.
            self._db.execute(
                "INSERT OR IGNORE INTO run_deltas (run_id, seq, text, at) SELECT ?,"
                " COALESCE(?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM run_deltas"
                " WHERE run_id = ?)), ?, ?"
                " WHERE NOT EXISTS (SELECT 1 FROM run_deltas WHERE run_id = ? AND seq = ?)",
                (run_id, seq, run_id, text, to_micros(now), run_id, self.ENDED),
            )
        return self._text(run_id)  # an ended run holds its mark alone: ""

    async def take(self, run_id: str, now: datetime) -> str:
        async with write_step(self._db):
            text = self._text(run_id)
            self._db.execute("DELETE FROM run_deltas WHERE run_id = ?", (run_id,))
            self._db.execute(
                "INSERT INTO run_deltas (run_id, seq, text, at) VALUES (?, ?, '', ?)",
                (run_id, self.ENDED, to_micros(now)),
            )
        return text

    async def prune(self, before: datetime) -> int:
        async with write_step(self._db):
            cursor = self._db.execute(
                "DELETE FROM run_deltas WHERE run_id IN"
                " (SELECT run_id FROM run_deltas GROUP BY run_id HAVING MAX(at) < ?)",
                (to_micros(before),),
            )
        return cursor.rowcount


class SqliteLeaseStore(LeaseStore):
    """Leases between processes sharing one SQLite file (one instance: always granted)."""

    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    async def acquire(self, name: str, holder: str, ttl: float) -> Lease | None:
        now = wall_clock()
        async with write_step(self._db):
            row = self._db.execute(
                "SELECT holder, token, expires_at FROM leases WHERE name = ?", (name,)
            ).fetchone()
            if row is not None and row[2] > now and row[0] != holder:
                return None
            token = row[1] if row is not None and row[2] > now else (row[1] + 1 if row else 1)
            self._db.execute(
                "INSERT INTO leases (name, holder, token, expires_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
                " token = excluded.token, expires_at = excluded.expires_at",
                (name, holder, token, now + ttl),
            )
        return Lease(name, holder, token)

    async def take_over(
        self, name: str, dead_holder: str, holder: str, ttl: float
    ) -> Lease | None:
        async with write_step(self._db, one_statement=True):
            self._db.execute(
                "UPDATE leases SET expires_at = 0 WHERE name = ? AND holder = ?",
                (name, dead_holder),
            )
        return await self.acquire(name, holder, ttl)

    async def renew(self, lease: Lease, ttl: float) -> bool:
        now = wall_clock()
        async with write_step(self._db, one_statement=True):
            cursor = self._db.execute(
                "UPDATE leases SET expires_at = ? WHERE name = ? AND holder = ? AND token = ?"
                " AND expires_at > ?",
                (now + ttl, lease.name, lease.holder, lease.token, now),
            )
        return cursor.rowcount == 1

    async def release(self, lease: Lease) -> None:
        async with write_step(self._db, one_statement=True):
            # Expire instead of delete: the token count must survive for the next grant.
            self._db.execute(
                "UPDATE leases SET expires_at = 0 WHERE name = ? AND holder = ? AND token = ?",
                (lease.name, lease.holder, lease.token),
            )

    async def holder(self, name: str) -> str | None:
        row = self._db.execute(
            "SELECT holder FROM leases WHERE name = ? AND expires_at > ?", (name, wall_clock())
        ).fetchone()
        return row[0] if row else None
