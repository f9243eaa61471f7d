"""One gateway per shard across all bridge instances, and a standby that takes it over.

Discord delivers every event of a shard to every session open on it: two instances
connected to one shard would both relay each message. So each shard's gateway runs under a
lease in the shared store (`gateway:<id>/<count>`), held by the core's `LeaseKeeper`: its
holder connects and renews the lease every TTL/3; the others stand by, asking again every
`STANDBY_RETRY` seconds, and take over when the lease is free — at once after an orderly
stop (the lease is released), at once when the holder was a process of this host that died
(`acquire_lease`), and within `GATEWAY_LEASE_TTL` + `STANDBY_RETRY` seconds after a holder
on another host died. A holder whose lease is refused, or whose store stayed silent until
the keeper's margin before the TTL, closes that gateway first and only then lets the lease
go: a standby never opens its own while this one is open.

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
        self.account = account
        self.spec = spec
        self.connect = connect
        self.keeper = state.keeper(spec.lease_name, ttl, standby_retry=standby_retry,
                                   who=self.who)
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
            await self.keeper.serve(
                self._hold, on_standby=self._settle,
                standing_by="another bridge instance runs this gateway; standing by",
            )
        except asyncio.CancelledError:
            self.first.cancel()  # nobody waits for a start that was called off
            raise
        except BaseException as exc:
            if not self.first.done():
                self.first.set_exception(exc)  # start() re-raises it
            raise

    async def _hold(self, lease: Lease) -> None:
        """The guarded work: open the gateway and keep it until it ends by itself (then
        reported, and this instance stops competing for the shard) or the keeper stops it.
        The keeper renews the lease while the gateway opens too, so a slow READY cannot let
        it expire; the shard is closed here, before the keeper lets the lease go."""
        shard: Shard | None = None
        try:
            shard = self.shard = await self.connect(self.spec)
            self._settle()
            log.info("%s: this instance runs the gateway (lease %s)", self.who, lease.token)
            failure = await shard.ended
        except DiscordStartError as exc:
            failure = exc
        finally:
            self.shard = None
            if shard is not None:
                await shard.close()  # before the keeper lets go: never two sessions relaying
        self._report(failure)

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
