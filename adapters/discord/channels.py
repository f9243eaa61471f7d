"""Finding a Discord channel by id, with or without the gateway of its shard.

A shard's client caches the channels of its servers; an instance that does not run that
shard (a standby, or one running other shards) still has to post there, since the outbox
hands any chat to any instance. So a channel is looked up in the caches of the shards this
instance runs first, and otherwise fetched once over REST and kept: ids, types and parents
are what posting needs, and they do not change. A fetched thread's parent is not in any
cache either; `parent_of` fetches it the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import discord


class ChannelLookup:
    def __init__(
        self, rest: discord.Client, caches: Callable[[], Iterable[discord.Client]]
    ) -> None:
        self.rest = rest
        self.caches = caches
        self._fetched: dict[int, object] = {}

    def cached(self, channel_id: int) -> object | None:
        """The channel from a running shard's cache, or as fetched before; no I/O."""
        for client in self.caches():
            if (found := client.get_channel(channel_id)) is not None:
                return found
        return self._fetched.get(channel_id)

    async def get(self, channel_id: int) -> object:
        """The channel, fetched over REST when no running shard has it; raises what
        discord.py raises (404 for a channel the bot cannot see)."""
        if (found := self.cached(channel_id)) is not None:
            return found
        fetched = await self.rest.fetch_channel(channel_id)
        self._fetched[channel_id] = fetched
        return fetched

    async def parent_of(self, thread: discord.Thread) -> object:
        """A thread's parent channel (a REST-fetched thread's parent is in no cache)."""
        return thread.parent or await self.get(thread.parent_id)
