"""Building the discord.py client and bringing its gateway connection up.

discord.py's `Client.start()` owns too much (it hides why it stopped, and a payload it
cannot parse ends it silently while `wait_until_ready()` waits forever), so the adapter
does its two halves itself: `login` (REST: who am I, which application) and `connect` as a
task, raced against readiness. What ended the task — a 4014 for a privileged intent that is
switched off, a rejected token, a timeout — comes back as one `DiscordStartError`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import discord

from adapters.discord.config import DiscordAccountConfig
from adapters.discord.errors import DiscordStartError, start_error

log = logging.getLogger(__name__)


def intents_for(config: DiscordAccountConfig) -> discord.Intents:
    """Servers, their messages and their content; members only where configured."""
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.message_content = True
    intents.members = config.members_intent
    return intents


def build_client(config: DiscordAccountConfig) -> discord.Client:
    """One gateway connection, or the configured shards of the bot."""
    # discord.py warns at every start that voice needs PyNaCl and davey; the bridge never
    # joins a voice channel, so the warnings would only worry whoever reads the log.
    discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False
    options = {
        "intents": intents_for(config),
        "max_ratelimit_timeout": config.max_ratelimit_timeout,
        "guild_ready_timeout": config.guild_ready_timeout,
        "chunk_guilds_at_startup": config.members_intent,
        "allowed_mentions": discord.AllowedMentions.none(),
    }
    if config.shard_count is None:
        return discord.Client(**options)
    return discord.AutoShardedClient(
        shard_ids=config.shard_ids, shard_count=config.shard_count, **options
    )


class GatewayConnection:
    """The client's connect task, from start until stop, and what ended it."""

    def __init__(
        self, client: discord.Client, config: DiscordAccountConfig, account: str,
        on_lost: Callable[[DiscordStartError], None],
    ) -> None:
        self.client = client
        self.config = config
        self.account = account
        self.on_lost = on_lost
        self._task: asyncio.Task[None] | None = None

    def _failure(self, exc: BaseException, *, logging_in: bool = False) -> DiscordStartError:
        where = (f"Discord at {self.config.api_base_url}" if logging_in
                 else f"the gateway at {self.config.gateway_url}")
        return start_error(exc, self.account, members=self.config.members_intent, where=where)

    async def open(self) -> None:
        """Log in and connect; return once the client is ready, or raise DiscordStartError."""
        client = self.client
        failure: DiscordStartError | None = None
        try:
            await client.login(self.config.token.get_secret_value())
        except (discord.DiscordException, OSError, TimeoutError) as exc:
            failure = self._failure(exc, logging_in=True)
        if failure is not None:
            # Raised outside the `except`, so no traceback chains the library's error.
            await client.close()
            raise failure
        self._task = asyncio.create_task(client.connect(reconnect=True), name="discord-gateway")
        ready = asyncio.create_task(client.wait_until_ready(), name="discord-ready")
        done, _ = await asyncio.wait(
            {self._task, ready}, timeout=self.config.ready_timeout,
            return_when=asyncio.FIRST_COMPLETED,
        )
        if ready in done:
            self._task.add_done_callback(self._ended)
            return
        ready.cancel()
        if self._task in done:
            failure = self._failure(self._ended_with(self._task))
        else:
            failure = self._failure(TimeoutError(
                f"the gateway at {self.config.gateway_url} did not become ready within "
                f"{self.config.ready_timeout:g}s"
            ))
        await self.close()
        raise failure

    @staticmethod
    def _ended_with(task: asyncio.Task[None]) -> BaseException:
        if task.cancelled():
            return asyncio.CancelledError()
        return task.exception() or ConnectionError("the gateway connection ended")

    def _ended(self, task: asyncio.Task[None]) -> None:
        """After start: a connection that ends on its own is reported in one line."""
        if task.cancelled():
            return
        self.on_lost(self._failure(self._ended_with(task)))

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.remove_done_callback(self._ended)
        await self.client.close()
        if task is not None and not task.done():
            task.cancel()
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
