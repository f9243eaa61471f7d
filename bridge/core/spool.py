"""Human messages on their way to the BCN: never lost to a link that is down.

A message goes to the hub at once when the link is up and nothing older waits; otherwise it
is written to the store's spool (atomically with its dedupe key, so it is accepted exactly
once) and sent, in arrival order, as soon as the link is back — after a restart too. The
adapter is never held up: a link outage costs a message a delay, not a place in the chat.

When the link comes back after the hub restarted, its bots are still reconnecting: kept
messages wait (up to `grace` seconds) until their group's bots are online again, instead of
reaching an empty room and drawing "no bot is available" answers.

The spool is bounded (`bcn.spool_limit`): past it a message is refused with a notice in its
chat, so an outage that lasts days cannot fill the disk, and nobody is left guessing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from bridge.background import Background
from bridge.bcn import BcnError, ConnectionClosed
from bridge.core.binding import Binding
from bridge.core.lease_keeper import LeaseKeeper, LeaseLost
from bridge.core.link import LinkClient
from bridge.core.outbox import Lane
from bridge.metrics import BridgeMetrics
from bridge.store.base import Store
from bridge.store.leases import Lease
from bridge.store.relay import SpoolEntry

log = logging.getLogger(__name__)

DEFAULT_SPOOL_LIMIT = 10_000
DRAIN_BATCH = 100
SPOOL_LEASE = 60.0
"""A drain that dies mid-way (kill -9) hands the spool over after this long (at most)."""
UNBOUND_GRACE = 3600.0
"""Seconds a kept message whose binding this instance lacks is left for an instance that has
it (a webchat served by one instance) before it counts as unbound and is dropped."""
BOT_GRACE = 15.0
"""Seconds after the link comes back that kept messages wait for their group's bots."""

Accepted = Callable[[Lane, dict[str, Any]], Awaitable[None]]
"""Called with the hub's `channel.inbound` answer once a message got there."""
Notify = Callable[[Lane, Binding, str], Awaitable[None]]
"""Posts a bridge notice in a chat."""
FindBinding = Callable[[str], Binding | None]
"""The binding for a `binding_key`, or None when the config no longer has it."""
BotsOnline = Callable[[Binding], Awaitable[bool]]
"""Are the binding's group's bots online (as the hub last said)?"""


def binding_key(binding: Binding) -> str:
    return f"{binding.channel}|{binding.chat}|{binding.thread or ''}"


class InboundSpool:
    def __init__(
        self,
        store: Store,
        link: LinkClient,
        *,
        clock: Callable[[], datetime],
        find_binding: FindBinding,
        on_accepted: Accepted,
        notify: Notify,
        bots_online: BotsOnline | None = None,
        limit: int = DEFAULT_SPOOL_LIMIT,
        grace: float = BOT_GRACE,
        holder: str = "bcn-bridge",
        metrics: BridgeMetrics | None = None,
    ) -> None:
        self.metrics = metrics or BridgeMetrics()
        self.store = store
        self.link = link
        self.clock = clock
        self.find_binding = find_binding
        self.on_accepted = on_accepted
        self.notify = notify
        self.bots_online = bots_online
        self.limit = limit
        self.grace = grace
        self.holder = holder
        self._link_up_at = 0.0
        self._backlog = True
        """Might the spool hold something? (True until a drain found it empty.)"""
        self._wake = asyncio.Event()
        self._told: set[str] = set()
        """Lanes told during this outage that their messages wait."""
        self._background = Background("spool")

    async def start(self) -> None:
        self._background.spawn(self._drain_forever(), name="spool-drain")
        self._wake.set()

    async def stop(self) -> None:
        await self._background.cancel_all()

    def link_up(self) -> None:
        """The link (re)connected: send what waits (once the bots are back)."""
        self._link_up_at = asyncio.get_running_loop().time()
        self._wake.set()

    def bots_changed(self) -> None:
        """Bots came or went: kept messages waiting for them may go now."""
        self._wake.set()

    async def hand_off(
        self, lane: Lane, binding: Binding, params: dict[str, Any], key: str
    ) -> None:
        """Deliver one message's `channel.inbound`, or keep it for later. `key` is its
        dedupe key: remembered once the hub or the spool has the message."""
        binding_id = self.link.binding_id(binding)
        if not self._backlog and self.link.connected and binding_id is not None:
            try:
                payload = await self.link.request(
                    "channel.inbound", {**params, "binding_id": binding_id}, wait_for_link=0
                )
            except (ConnectionClosed, TimeoutError):
                log.info("BCN link went down; keeping message %s", params.get("msg_id"))
            except BcnError as exc:
                if not exc.retryable:
                    await self.store.seen.add(key, self.clock())
                    await self._refused(lane, binding, params, exc)
                    return
            else:
                # The hub has it now and knows its msg_id: a crash that loses the key costs a
                # redelivery the hub answers `duplicate`, so the key need not wait for a commit.
                await self.store.seen.note(key, self.clock())
                self.metrics.accepted(lane.channel)
                await self.on_accepted(lane, payload)
                return
        await self._keep(lane, binding, params, key)

    async def _keep(
        self, lane: Lane, binding: Binding, params: dict[str, Any], key: str
    ) -> None:
        if await self.store.spool.count() >= self.limit:
            log.error(
                "BCN unreachable and %d messages already wait; refusing message %s in %s",
                self.limit, params.get("msg_id"), lane.key,
            )
            self.metrics.drop(lane.channel, "in", "spool_full")
            await self.notify(
                lane, binding,
                f"⚠️ The bots are unreachable and {self.limit} messages are already waiting "
                "for them; this message was not kept. Please send it again later.",
            )
            return
        entry = SpoolEntry(lane.key, binding_key(binding), params, created_at=self.clock())
        if await self.store.spool.append(entry, once=key, now=self.clock()) is None:
            return  # accepted before (a platform redelivery)
        self.metrics.accepted(lane.channel)
        self.metrics.hold(lane.channel, "link_down")
        self._backlog = True
        self._wake.set()
        if lane.key not in self._told:
            self._told.add(lane.key)
            await self.notify(
                lane, binding,
                "⏳ The bots are unreachable right now. Your messages are kept and will reach "
                "them, in order, as soon as the connection is back.",
            )

    async def _refused(
        self, lane: Lane, binding: Binding, params: dict[str, Any], exc: BcnError
    ) -> None:
        log.error("the BCN refused message %s in %s: %s", params.get("msg_id"), lane.key, exc)
        self.metrics.drop(lane.channel, "in", "bcn_refused")
        await self.notify(lane, binding, f"⚠️ The bots could not take this message: {exc}")

    # ------------------------------------------------------------------ draining
    async def _drain_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if not self.link.connected:
                continue
            try:
                await self.drain()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("spool: sending waiting messages failed; will retry")
                await asyncio.sleep(1.0)
                self._wake.set()

    async def drain(self) -> int:
        """Send waiting messages in order until none is left or the link drops — as the
        one instance holding the spool lease, so order holds across instances."""
        keeper = LeaseKeeper(self.store.leases, "relay:spool", self.holder, ttl=SPOOL_LEASE,
                             who="spool")
        if await keeper.acquire() is None:
            return 0  # another instance drains; it sees our entries in the store
        try:
            return await keeper.run(self._drain)
        except LeaseLost:
            log.warning("spool: lost the spool lease; another instance sends the rest")
            return 0

    async def _drain(self, _lease: Lease) -> int:
        """The drain itself, while the keeper holds the spool lease (and stops this first
        when it can no longer be sure it does)."""
        sent = 0
        while True:
            entries = await self.store.spool.pending(DRAIN_BATCH)
            if not entries:
                self._backlog = False
                self._told.clear()
                if sent:
                    log.info("spool: delivered %d message(s) kept while the BCN was away", sent)
                return sent
            for entry in entries:
                if not await self._send(entry):
                    return sent
                sent += 1

    def _abandoned(self, entry: SpoolEntry) -> bool:
        """Kept so long for a binding this instance lacks that no instance can have it."""
        created = entry.created_at
        return created is None or (self.clock() - created).total_seconds() > UNBOUND_GRACE

    async def _send(self, entry: SpoolEntry) -> bool:
        """True when the entry is done with (delivered or given up), False if the link is
        down again (the entry stays, first in line)."""
        lane = Lane.from_key(entry.lane)
        binding = self.find_binding(entry.binding)
        binding_id = self.link.binding_id(binding) if binding is not None else None
        if binding is None and not self._abandoned(entry):
            return False  # bound on another instance (the webchat's, say): it sends this one
        if binding is None or binding_id is None:
            log.error("spool: %s is no longer bound; dropping message %s kept for it",
                      entry.binding, entry.params.get("msg_id"))
            await self.store.spool.complete(entry.id)
            return True
        loop = asyncio.get_running_loop()
        waited = loop.time() - self._link_up_at
        online = self.bots_online is None or await self.bots_online(binding)
        if not online and waited < self.grace:
            loop.call_later(self.grace - waited, self._wake.set)
            return False  # its bots are still reconnecting; `bots_changed` wakes us
        while True:
            try:
                payload = await self.link.request(
                    "channel.inbound", {**entry.params, "binding_id": binding_id},
                    wait_for_link=0,
                )
            except (ConnectionClosed, TimeoutError):
                return False
            except BcnError as exc:
                if exc.retryable:  # the hub is busy: wait as told, keep the order
                    await asyncio.sleep((exc.retry_after_ms or 500) / 1000)
                    continue
                await self.store.spool.complete(entry.id)
                await self._refused(lane, binding, entry.params, exc)
                return True
            break
        await self.store.spool.complete(entry.id)
        await self.on_accepted(lane, payload)
        return True
