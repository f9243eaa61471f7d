"""Durable records a platform account keeps for itself, through the one store.

Adapters remember a few platform facts that must survive a restart and be shared by every
bridge instance: the webhook ids they created (so their own posts are recognised as echoes
even before the webhook is looked up again), the last message they relayed per channel (to
catch up on what was posted while the bridge was down), event ids already handled (Slack
redelivers). Keeping these in the `Store` instead of in the adapter object is what lets a
kill -9 or a second instance lose nothing.

Records are namespaced by the account (`"discord:main"`), and age out with the relay's
retention like every message-map record: write a record again when you rely on it for
longer (e.g. on every start).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from bridge.core.claims import claim_event, release_quietly
from bridge.core.instance import instance_name
from bridge.core.lease_keeper import LeaseKeeper
from bridge.store.base import Store

DONE_AMONG_BATCH = 500
"""Keys asked about in one store call (SQLite binds each as a parameter)."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


class AccountState:
    """Small JSON records and once-only keys for one platform account."""

    def __init__(
        self,
        store: Store,
        channel: str,
        clock: Callable[[], datetime] = _utc_now,
        *,
        holder: str | None = None,
    ) -> None:
        self.store = store
        self.channel = channel
        self.clock = clock
        self.holder = holder or instance_name("bcn-bridge")
        """This bridge process, as lease holders are named."""

    @classmethod
    def in_memory(cls, channel: str) -> AccountState:
        """A private memory store: for an adapter running outside a relay (tests, tools)."""
        from bridge.store.memory import MemoryStore

        return cls(MemoryStore(), channel)

    def _key(self, key: str) -> str:
        return f"acct:{self.channel}:{key}"

    async def get(self, key: str) -> dict[str, Any] | None:
        return await self.store.message_map.get(self._key(key))

    async def put(self, key: str, value: dict[str, Any]) -> None:
        await self.store.message_map.put(self._key(key), value, self.clock())

    async def done_among(self, keys: list[str]) -> set[str]:
        """Which of `keys` were marked `done`: one store call per `DONE_AMONG_BATCH` keys,
        not one per key (a journal of a long outage holds thousands)."""
        done: set[str] = set()
        for start in range(0, len(keys), DONE_AMONG_BATCH):
            batch = {self._key(key): key for key in keys[start:start + DONE_AMONG_BATCH]}
            done.update(batch[stored] for stored in await self.store.seen.seen_at(list(batch)))
        return done

    async def claim(self, key: str) -> bool:
        """Take the event `key` for this instance before handling it: True to handle it,
        False when it was handled already (by any instance). One atomic store step, where
        asking whether it was done and then marking it `done` let two instances through
        between the two; waits while another instance holds a live claim (see
        `bridge.core.claims`)."""
        return await claim_event(self.store.seen, self._key(key), self.holder)

    async def unclaim(self, key: str) -> None:
        """The handling of `key` failed: free its claim so a redelivery is handled now."""
        await release_quietly(self.store.seen, self._key(key), self.holder)

    async def done(self, key: str) -> None:
        """Mark `key` handled — once the work is safe, so a crash before lets a redelivery
        through instead of losing it."""
        await self.store.seen.add(self._key(key), self.clock())

    def keeper(self, name: str, ttl: float, **options: Any) -> LeaseKeeper:
        """Work only one bridge instance may do for this account (one poller per token, one
        gateway per shard): the account's lease `name`, held by the core's one keeper."""
        return LeaseKeeper(self.store.leases, f"{self.channel}:{name}", self.holder, ttl=ttl,
                           **options)
