"""The relay's concerns in process memory (tests and `memory://`)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

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
from bridge.store.relay import (
    MessageMapStore,
    OutboxItem,
    OutboxStore,
    SeenStore,
    SpoolEntry,
    SpoolStore,
)
from bridge.store.streams import StreamStore


class MemorySeenStore(SeenStore):
    def __init__(self) -> None:
        self._seen: dict[str, datetime] = {}
        self._claims: dict[str, tuple[str, datetime]] = {}
        """Claimed keys → (holder, when the claim expires)."""

    async def add(self, key: str, now: datetime) -> bool:
        if key in self._seen:
            return False
        self._seen[key] = now
        # Seen for good: the claim says nothing more (dropping it here costs nothing).
        self._claims.pop(key, None)
        return True

    async def claim(self, key: str, holder: str, now: datetime, ttl: float) -> bool:
        if key in self._seen:
            return False
        held = self._claims.get(key)
        if held is not None and now < held[1]:
            return False
        self._claims[key] = (holder, now + timedelta(seconds=ttl))
        return True

    async def release(self, key: str, holder: str) -> None:
        held = self._claims.get(key)
        if held is not None and held[0] == holder:
            del self._claims[key]

    async def claimant(self, key: str) -> str | None:
        held = self._claims.get(key)
        return None if held is None or key in self._seen else held[0]

    async def take_over(self, key: str, dead: str, holder: str, now: datetime,
                        ttl: float) -> bool:
        held = self._claims.get(key)
        if key in self._seen or held is None or held[0] != dead:
            return False
        self._claims[key] = (holder, now + timedelta(seconds=ttl))
        return True

    async def has(self, key: str) -> bool:
        return key in self._seen

    async def seen_at(self, keys: Sequence[str]) -> dict[str, datetime]:
        return {key: self._seen[key] for key in keys if key in self._seen}

    async def prune(self, before: datetime) -> int:
        old = [key for key, at in self._seen.items() if at < before]
        for key in old:
            del self._seen[key]
        for key in [key for key, (_, until) in self._claims.items() if until < before]:
            del self._claims[key]
        return len(old)


class MemoryOutboxStore(OutboxStore):
    def __init__(
        self,
        seen: MemorySeenStore,
        message_map: MemoryMessageMapStore,
        leases: MemoryLeaseStore | None = None,
    ) -> None:
        self._items: dict[int, OutboxItem] = {}
        self._next_id = 1
        self._seen = seen
        self._message_map = message_map
        self._leases = leases
        """Where fencing tokens are checked (the same store's leases)."""

    def _check(self, fence: Lease | None) -> None:
        if fence is not None and self._leases is not None:
            self._leases.check(fence)

    async def append(
        self, item: OutboxItem, *, once: str | None = None, now: datetime | None = None
    ) -> int | None:
        # No await in between: on one event loop the check and both writes are atomic.
        if once is not None and not await self._seen.add(once, now or item.created_at):
            return None
        item.id = self._next_id
        self._next_id += 1
        self._items[item.id] = copy.deepcopy(item)
        return item.id

    async def pending(
        self, lane: str | None = None, limit: int | None = None
    ) -> list[OutboxItem]:
        keys = [key for key in sorted(self._items)
                if lane is None or self._items[key].lane == lane]
        # Only what is returned is copied: `quiet` asks for one item of a lane per reply.
        return [copy.deepcopy(self._items[key]) for key in keys[:limit]]

    async def lanes(self) -> list[str]:
        return sorted({item.lane for item in self._items.values()})

    async def count(self) -> int:
        return len(self._items)

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
        self._check(fence)  # no await before the writes: checked and written atomically
        item = self._items.get(item_id)
        if item is not None:
            item.sent[index] = message_id
        for key, value in (remember or {}).items():
            await self._message_map.put(key, value, now or datetime.now(UTC))
        if done:
            self._items.pop(item_id, None)

    async def complete(self, item_id: int, *, fence: Lease | None = None) -> None:
        self._check(fence)
        self._items.pop(item_id, None)


class MemoryMessageMapStore(MessageMapStore):
    def __init__(self) -> None:
        self._values: dict[str, tuple[dict[str, Any], datetime]] = {}

    async def put(self, key: str, value: dict[str, Any], now: datetime) -> None:
        self._values[key] = (dict(value), now)

    async def get(self, key: str) -> dict[str, Any] | None:
        found = self._values.get(key)
        return dict(found[0]) if found else None

    async def prune(self, before: datetime) -> int:
        old = [key for key, (_, at) in self._values.items() if at < before]
        for key in old:
            del self._values[key]
        return len(old)


class MemorySpoolStore(SpoolStore):
    def __init__(self, seen: MemorySeenStore) -> None:
        self._entries: dict[int, SpoolEntry] = {}
        self._next_id = 1
        self._seen = seen

    async def append(self, entry: SpoolEntry, *, once: str, now: datetime) -> int | None:
        if not await self._seen.add(once, now):
            return None
        entry.id = self._next_id
        self._next_id += 1
        kept = copy.deepcopy(entry)
        kept.created_at = entry.created_at or now  # as SQLite and Redis keep it
        self._entries[entry.id] = kept
        return entry.id

    async def pending(self, limit: int = 100) -> list[SpoolEntry]:
        return [copy.deepcopy(self._entries[key]) for key in sorted(self._entries)[:limit]]

    async def complete(self, entry_id: int) -> None:
        self._entries.pop(entry_id, None)

    async def count(self) -> int:
        return len(self._entries)


class MemoryLoopGuardStore(LoopGuardStore):
    def __init__(self, seen: MemorySeenStore, outbox: MemoryOutboxStore) -> None:
        self._lanes: dict[str, LaneGuard] = {}
        self._held: dict[str, list[OutboxItem]] = {}
        self._seen = seen
        self._outbox = outbox

    async def bot_spoke(
        self, lane: str, *, limit: int, window: float, now: datetime
    ) -> Verdict:
        state = self._lanes.setdefault(lane, LaneGuard())
        return guard_turn(state, limit=limit, window=window, now=now.timestamp())

    async def is_paused(self, lane: str) -> bool:
        state = self._lanes.get(lane)
        return state is not None and state.paused

    async def quiet(self, lane: str) -> bool:
        return lane not in self._lanes and not await self._outbox.pending(lane=lane, limit=1)

    async def hold(
        self, lane: str, item: OutboxItem, *, keep: int, once: str | None, now: datetime
    ) -> bool:
        if once is not None and not await self._seen.add(once, now):
            return False
        held = self._held.setdefault(lane, [])
        if len(held) < keep:
            held.append(copy.deepcopy(item))
        else:
            self._lanes.setdefault(lane, LaneGuard()).held_over += 1
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
        # No await yields in between: on one event loop the whole step is atomic.
        if once is not None and not await self._seen.add(once, now):
            return "seen", None
        if answers_human and lane not in self._lanes:
            return "allow", await self._outbox.append(item)
        verdict = await self.bot_spoke(lane, limit=limit, window=window, now=now)
        if verdict == "allow":
            return verdict, await self._outbox.append(item)
        await self.hold(lane, item, keep=keep, once=None, now=now)
        return verdict, None

    async def human_spoke(self, lane: str) -> Released | None:
        state = self._lanes.pop(lane, None)
        held = self._held.pop(lane, [])
        if state is None or not state.paused:
            return None
        for item in held:
            await self._outbox.append(item)
        return Released(held, state.held_over)

    async def held_lanes(self) -> list[HeldLane]:
        # Every lane the guard counts in: as many as lanes with recent bot messages, which a
        # memory store (tests, one-off runs) keeps few of.
        return [
            HeldLane(lane, len(self._held.get(lane, ())), state.held_over)
            for lane, state in sorted(self._lanes.items())
            if state.paused
        ]


class MemoryStreamStore(StreamStore):
    def __init__(self) -> None:
        self._runs: dict[str, tuple[dict[int, str], datetime]] = {}
        self._ended: dict[str, datetime] = {}

    async def append(self, run_id: str, seq: int | None, text: str, now: datetime) -> str:
        if run_id in self._ended:
            return ""
        deltas = self._runs.get(run_id, ({}, now))[0]
        if seq is None:
            seq = max(deltas, default=0) + 1
        deltas.setdefault(seq, text)
        self._runs[run_id] = (deltas, now)
        return "".join(deltas[key] for key in sorted(deltas))

    async def take(self, run_id: str, now: datetime) -> str:
        deltas = self._runs.pop(run_id, ({}, None))[0]
        self._ended[run_id] = now
        return "".join(deltas[key] for key in sorted(deltas))

    async def prune(self, before: datetime) -> int:
        old = [run for run, (_, at) in self._runs.items() if at < before]
        for run in old:
            del self._runs[run]
        for run in [run for run, at in self._ended.items() if at < before]:
            del self._ended[run]
        return len(old)


class MemoryLeaseStore(LeaseStore):
    def __init__(self) -> None:
        self._leases: dict[str, tuple[str, int, float]] = {}
        """name -> (holder, token, expires at)"""
        self._tokens: dict[str, int] = {}

    async def acquire(self, name: str, holder: str, ttl: float) -> Lease | None:
        now = wall_clock()
        current = self._leases.get(name)
        if current is not None and current[2] > now and current[0] != holder:
            return None
        if current is not None and current[2] > now:
            token = current[1]
        else:
            token = self._tokens[name] = self._tokens.get(name, 0) + 1
        self._leases[name] = (holder, token, now + ttl)
        return Lease(name, holder, token)

    async def take_over(
        self, name: str, dead_holder: str, holder: str, ttl: float
    ) -> Lease | None:
        current = self._leases.get(name)
        if current is not None and current[0] == dead_holder:
            del self._leases[name]
        return await self.acquire(name, holder, ttl)

    async def renew(self, lease: Lease, ttl: float) -> bool:
        current = self._leases.get(lease.name)
        now = wall_clock()
        if current is None or current[:2] != (lease.holder, lease.token) or current[2] <= now:
            return False
        self._leases[lease.name] = (lease.holder, lease.token, now + ttl)
        return True

    async def release(self, lease: Lease) -> None:
        current = self._leases.get(lease.name)
        if current is not None and current[:2] == (lease.holder, lease.token):
            del self._leases[lease.name]

    async def holder(self, name: str) -> str | None:
        current = self._leases.get(name)
        return current[0] if current is not None and current[2] > wall_clock() else None

    def check(self, fence: Lease) -> None:
        """Raise `StaleLease` if `fence` is older than the lease's newest grant."""
        newest = self._tokens.get(fence.name, 0)
        if newest > fence.token:
            raise StaleLease(fence, newest)
