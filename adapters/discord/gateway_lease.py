"""One gateway per shard across all bridge instances, and a standby that takes it over.

Discord delivers every event of a shard to every session open on it: two instances
connected to one shard would both relay each message. So each shard's gateway runs under a
lease in the shared store (`gateway:<id>/<count>`): its holder connects and renews the
lease every TTL/3; the others stand by, asking again every `STANDBY_RETRY` seconds, and
take over when the lease is free — at once after an orderly stop (the lease is released),
at once when the holder was a process of this host that died (`acquire_lease`), and within
`GATEWAY_LEASE_TTL` + `STANDBY_RETRY` seconds after a holder on another host died. A holder
that cannot renew (lost, or the store unreachable for a whole TTL) closes that gateway at
once: a standby may already have opened its own.

The lease is renewed while the gateway is being opened too, so a slow READY cannot let it
expire. A gateway that gives up on its own (a privileged intent switched off) is reported
once and its lease released; this instance does not compete for that shard again until it
restarts, so a broken setting does not bounce the shard between instances forever.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from adapters.discord.errors import DiscordStartError
from adapters.discord.shards import Shard, ShardSpec
from bridge.core.account_state import AccountState
from bridge.store.leases import Lease

log = logging.getLogger(__name__)

GATEWAY_LEASE_TTL = 10.0
STANDBY_RETRY = 2.0

Connect = Callable[[ShardSpec], Awaitable[Shard]]
"""Open a shard's gateway; returns once it is ready, raises DiscordStartError."""


class GatewayLease:
    """Runs one shard's gateway while this instance holds the shard's lease."""

    def __init__(
        self, state: AccountState, account: str, spec: ShardSpec, connect: Connect, *,
        ttl: float = GATEWAY_LEASE_TTL, standby_retry: float = STANDBY_RETRY,
    ) -> None:
        self.state = state
        self.account = account
        self.spec = spec
        self.connect = connect
        self.ttl = ttl
        self.standby_retry = standby_retry
        self.shard: Shard | None = None
        """The open shard while this instance holds it."""
        self.first: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        """Settled after the first attempt: held and ready, standing by, or the error."""
        self.broken: DiscordStartError | None = None
        """Why this instance gave the shard up for good (e.g. a 4014), for `/readyz`."""

    @property
    def who(self) -> str:
        return f"discord:{self.account} shard {self.spec.name}"

    async def run(self) -> None:
        """Until cancelled (the adapter stops) or the gateway broke for good."""
        try:
            await self._compete()
        except asyncio.CancelledError:
            self.first.cancel()  # nobody waits for a start that was called off
            raise
        except BaseException as exc:
            if not self.first.done():
                self.first.set_exception(exc)  # start() re-raises it
            raise

    async def _compete(self) -> None:
        lease = await self._acquire()
        told_standby = False
        while True:
            if lease is None:
                self._settle()
                if not told_standby:
                    log.info("%s: another bridge instance runs this gateway; standing by",
                             self.who)
                    told_standby = True
                await asyncio.sleep(self.standby_retry)
                lease = await self._acquire()
                continue
            told_standby = False
            if not await self._hold(lease):
                return
            lease = None

    async def _acquire(self) -> Lease | None:
        try:
            return await self.state.lease(self.spec.lease_name, self.ttl)
        except Exception as exc:  # the store is unreachable: stand by, ask again
            log.warning("%s: could not ask the store for the gateway lease: %s", self.who, exc)
            return None

    async def _hold(self, lease: Lease) -> bool:
        """Open the gateway and keep it while the lease lasts; False: stop competing."""
        renewing = asyncio.create_task(self._renew_until_lost(lease), name=f"{self.who} lease")
        opening = asyncio.create_task(self.connect(self.spec), name=f"{self.who} connect")
        shard: Shard | None = None
        release = True  # an orderly stop or a broken gateway hands the lease on at once
        try:
            await asyncio.wait({opening, renewing}, return_when=asyncio.FIRST_COMPLETED)
            if not opening.done():
                release = False
                log.warning("%s lost its gateway lease while connecting; standing by", self.who)
                return True
            if (failure := opening.exception()) is not None:
                if not isinstance(failure, DiscordStartError):
                    raise failure
                self._report(failure)
                return False
            shard = self.shard = opening.result()
            self._settle()
            log.info("%s: this instance runs the gateway (lease %s)", self.who, lease.token)
            await asyncio.wait({shard.ended, renewing}, return_when=asyncio.FIRST_COMPLETED)
            if shard.ended.done():
                self._report(shard.ended.result())
                return False
            release = False
            log.warning("%s lost its gateway lease; closing the gateway", self.who)
            return True
        finally:
            renewing.cancel()
            opening.cancel()
            await asyncio.gather(renewing, opening, return_exceptions=True)
            self.shard = None
            if shard is not None:
                await shard.close()  # before the release: never two sessions relaying
            if release:
                await self._release(lease)

    def _settle(self, failure: DiscordStartError | None = None) -> None:
        if self.first.done():
            return
        if failure is None:
            self.first.set_result(None)
        else:
            self.first.set_exception(failure)

    def _report(self, failure: DiscordStartError) -> None:
        """The first attempt's failure goes to `start()`; a later one is logged once."""
        self.broken = failure
        if not self.first.done():
            self._settle(failure)
            return
        log.error("%s; this instance runs no gateway for shard %s until the bridge restarts",
                  failure, self.spec.name)

    async def _renew_until_lost(self, lease: Lease) -> None:
        """Returns once the lease is lost (or the store did not answer for a whole TTL)."""
        loop = asyncio.get_running_loop()
        renewed = loop.time()
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                if not await self.state.renew(lease, self.ttl):
                    return
                renewed = loop.time()
            except Exception as exc:  # the store is unreachable: the lease may be gone
                log.warning("%s: could not renew the gateway lease: %s", self.who, exc)
                if loop.time() - renewed >= self.ttl:
                    return

    async def _release(self, lease: Lease) -> None:
        try:
            await self.state.release(lease)
        except Exception as exc:  # it expires by itself
            log.warning("%s: could not release the gateway lease: %s", self.who, exc)
