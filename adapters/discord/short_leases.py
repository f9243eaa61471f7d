"""Short jobs only one bridge instance may do at a time: wait for the lease, do, let go.

Registering a server's slash commands and finding or creating a channel's webhook take a
few REST calls each; two instances doing them at once would register twice (Discord counts
command creates per day) or create two webhooks. The job runs under the core's
`LeaseKeeper` like every other lease: renewed while it runs, so a slow Discord cannot let
the lease pass mid-job, and stopped (`LeaseLost`) before the lease could pass if the store
stays silent. An instance that died holding it delays the next one by the TTL at most (at
once on the same host, see `acquire_lease`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from bridge.core.account_state import AccountState

T = TypeVar("T")


async def under_lease(
    state: AccountState, name: str, job: Callable[[], Awaitable[T]], *, ttl: float,
    retry: float,
) -> T:
    """Run `job` under the account's lease `name`, waiting while another instance has it."""
    keeper = state.keeper(name, ttl, standby_retry=retry, who=f"{state.channel} {name}")
    await keeper.wait_acquire()
    return await keeper.run(lambda _lease: job())
