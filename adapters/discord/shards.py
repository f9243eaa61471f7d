"""The shards of one bot account, and one shard's live gateway connection in this instance.

Discord sends each server's events to one shard: `(guild_id >> 22) % shard_count`. Without
`shard_count` the bot runs one unsharded connection, shard 0/1 here. With `shard_ids` the
instance only ever runs those shards (a static assignment); without, it competes for every
shard of `shard_count` under the shards' leases (`gateway_lease.py`).

A `Shard` is what holding one shard means in this process: its own discord.py client (its
own session and cache: the servers of that shard), its own command tree (interactions
arrive on the shard of their server), its own catch-up gate (closed while that shard's
channels are caught up after a new session) and its own background tasks (backfill,
command sync), all ended together when the shard is closed.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import discord
from discord import app_commands

from adapters.discord.commands import CommandSync
from adapters.discord.config import DiscordAccountConfig
from adapters.discord.errors import DiscordStartError
from adapters.discord.startup import GatewayConnection
from bridge.background import Background
from bridge.core.account_state import AccountState


@dataclass(frozen=True, slots=True)
class ShardSpec:
    id: int
    count: int
    sharded: bool = True
    """False: no `shard_count` configured; IDENTIFY names no shard (Discord's 0 of 1)."""

    @property
    def name(self) -> str:
        return f"{self.id}/{self.count}"

    @property
    def lease_name(self) -> str:
        """The account lease that says which instance runs this shard's gateway."""
        return f"gateway:{self.name}"

    def covers(self, guild_id: int) -> bool:
        return (guild_id >> 22) % self.count == self.id


def shards_for(config: DiscordAccountConfig) -> list[ShardSpec]:
    """The shards this instance may run: `shard_ids` if given, else all of `shard_count`."""
    if config.shard_count is None:
        return [ShardSpec(0, 1, sharded=False)]
    ids = config.shard_ids if config.shard_ids is not None else range(config.shard_count)
    return [ShardSpec(shard_id, config.shard_count) for shard_id in ids]


class Shard:
    """One shard's gateway in this instance, from open until close."""

    def __init__(
        self, spec: ShardSpec, client: discord.Client, config: DiscordAccountConfig,
        account: str, state: AccountState,
    ) -> None:
        self.spec = spec
        self.client = client
        self.tree = app_commands.CommandTree(client)
        self.commands = CommandSync(self.tree, state, account)
        self.connection = GatewayConnection(client, config, account, self._lost)
        self.gate = asyncio.Event()
        """Open while live events may be relayed; closed while catching up on history."""
        self.caught_up: set[int] = set()
        """Message ids the last catch-up relayed: their live events, queued at the gate
        meanwhile, are not relayed again."""
        self.ready_once = False
        self.closed = False
        self.ended: asyncio.Future[DiscordStartError] = asyncio.get_running_loop().create_future()
        """Resolved when the gateway gave up on its own (e.g. an intent switched off)."""
        self.background = Background(f"discord:{account} shard {spec.name}")

    async def open(self) -> None:
        """Log in, connect, return once ready (or raise DiscordStartError)."""
        await self.connection.open()

    def _lost(self, failure: DiscordStartError) -> None:
        if not self.ended.done():
            self.ended.set_result(failure)

    async def close(self) -> None:
        """Close the gateway at once; handlers waiting at the gate run to their end (they
        see `closed`), backfill and command sync are cancelled."""
        self.closed = True
        self.gate.set()
        await self.background.cancel_all()
        await self.connection.close()
