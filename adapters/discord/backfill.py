"""Catching up after a restart: what people posted while the bridge was away.

The adapter keeps, per Discord channel of a binding (the channel, and each of its threads),
the id of the last message it relayed — a cursor in the account's store, shared by every
bridge instance. When a shard's gateway becomes ready (a start, a reconnect whose session
could not be resumed, or this instance taking the shard over from one that died) each such
channel of that shard's servers has its history after its cursor relayed oldest first, at
most `backfill_limit` messages per channel (the newest ones, when more were missed). Only
the instance running the shard reads its history and moves its cursors; a new holder reads
the cursors from the store afresh, so it catches up exactly what the old one had not
relayed. A
thread without a cursor of its own starts from its channel's: ids are timestamps, so "after
the channel's last relayed message" is "posted while the bridge was away" for it too.

The first time a channel is seen there is nothing to catch up on: its cursor starts at its
newest message. Each message is relayed once — the core drops a message id it has already
seen — and in order: live messages wait at the adapter's gate until the catch-up is done.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import discord

from bridge.core.account_state import AccountState

log = logging.getLogger(__name__)

HistoryChannel = discord.TextChannel | discord.Thread | discord.VoiceChannel
Relay = Callable[[discord.Message], Awaitable[None]]


class ChannelLocks:
    """One lock per Discord channel: its messages are relayed one at a time, in order.

    A handler must take the lock before its first `await`, so that handlers start in the
    order the gateway delivered their events (asyncio's lock queues waiters fairly).
    """

    def __init__(self) -> None:
        self._locks: dict[int, asyncio.Lock] = {}

    def __call__(self, channel_id: int) -> asyncio.Lock:
        return self._locks.setdefault(channel_id, asyncio.Lock())


class Cursors:
    """The last relayed message id per Discord channel, in the store."""

    def __init__(self, state: AccountState) -> None:
        self.state = state
        self._known: dict[int, int] = {}

    async def get(self, channel_id: int) -> int | None:
        if channel_id in self._known:
            return self._known[channel_id]
        record = await self.state.get(f"cursor:{channel_id}")
        value = record.get("id") if record else None
        if isinstance(value, str) and value.isdigit():
            self._known[channel_id] = int(value)
            return int(value)
        return None

    async def advance(self, channel_id: int, message_id: int) -> None:
        current = await self.get(channel_id)
        if current is None or message_id > current:
            self._known[channel_id] = message_id
            await self.state.put(f"cursor:{channel_id}", {"id": str(message_id)})

    def forget(self) -> None:
        """Read every cursor from the store again: another instance may have moved it while
        this one did not run the channel's shard."""
        self._known.clear()

    async def keep(self, channel_id: int) -> None:
        """Write the cursor again so it outlives the store's retention."""
        if (current := await self.get(channel_id)) is not None:
            await self.state.put(f"cursor:{channel_id}", {"id": str(current)})


class Backfill:
    def __init__(
        self, account: str, cursors: Cursors, locks: ChannelLocks, relay: Relay, limit: int
    ) -> None:
        self.account = account
        self.cursors = cursors
        self.locks = locks
        self.relay = relay
        self.limit = limit
        self.relayed: set[int] = set()
        """The ids relayed from history (a live event of one of them is a duplicate)."""

    async def catch_up(self, channels: list[HistoryChannel]) -> int:
        """Relay what each channel missed; returns how many messages were relayed."""
        relayed = 0
        for channel in channels:
            try:
                relayed += await self._channel(channel)
            except discord.HTTPException as exc:
                log.warning("discord:%s could not read the history of %s (%s): %s",
                            self.account, channel.name, channel.id, exc)
        return relayed

    async def _channel(self, channel: HistoryChannel) -> int:
        async with self.locks(channel.id):
            cursor = await self.cursors.get(channel.id)
            if cursor is None and isinstance(channel, discord.Thread) and channel.parent_id:
                cursor = await self.cursors.get(channel.parent_id)
            if cursor is None:
                if channel.last_message_id is not None:
                    await self.cursors.advance(channel.id, channel.last_message_id)
                return 0
            await self.cursors.keep(channel.id)
            if self.limit == 0:
                return 0
            missed: list[discord.Message] = []
            async for message in channel.history(limit=self.limit + 1):
                if message.id <= cursor:
                    break
                missed.append(message)
            if len(missed) > self.limit:
                missed = missed[: self.limit]
                log.warning(
                    "discord:%s: more than %d messages were posted in #%s while the bridge "
                    "was away; relaying the latest %d (backfill_limit)",
                    self.account, self.limit, channel.name, self.limit,
                )
            for message in reversed(missed):
                await self.relay(message)
                self.relayed.add(message.id)
            if missed:
                log.info("discord:%s caught up on %d message(s) in #%s",
                         self.account, len(missed), channel.name)
            return len(missed)
