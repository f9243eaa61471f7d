"""Short jobs only one bridge instance may do at a time: wait for the lease, do, release.

Registering a server's slash commands and finding or creating a channel's webhook take a
few REST calls each; two instances doing them at once would register twice (Discord counts
command creates per day) or create two webhooks. The lease is never renewed, so its TTL
must outlast the job; an instance that died holding it delays the next one by that TTL at
most (at once on the same host, see `acquire_lease`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bridge.core.account_state import AccountState


@asynccontextmanager
async def under_lease(
    state: AccountState, name: str, *, ttl: float, retry: float
) -> AsyncIterator[None]:
    """Hold the account's lease `name` for the block, waiting while another instance has it."""
    while True:
        lease = await state.lease(name, ttl)
        if lease is not None:
            break
        await asyncio.sleep(retry)
    try:
        yield
    finally:
        await state.release(lease)
