"""Building discord.py clients, logging in, and bringing one shard's gateway connection up.

discord.py's `Client.start()` owns too much (it hides why it stopped, and a payload it
cannot parse ends it silently while `wait_until_ready()` waits forever), so the adapter
does its two halves itself: `login` (REST: who am I, which application) and `connect` as a
task, raced against readiness. What ended the task — a 4014 for a privileged intent that is
switched off, a rejected token, a timeout — comes back as one `DiscordStartError`.

Every instance logs one client in over REST only (it posts, edits and looks channels up:
the outbox may hand any instance any chat), and opens one more client per shard whose
gateway lease it holds (see `gateway_lease.py`). IDENTIFYs of one instance are paced:
Discord accepts one per 5 s per bot (`max_concurrency` 1), which discord.py's
`AutoShardedClient` would otherwise have done for us.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import discord

from adapters.discord.config import DiscordAccountConfig
from adapters.discord.errors import DiscordStartError, start_error

if TYPE_CHECKING:
    from adapters.discord.shards import ShardSpec

log = logging.getLogger(__name__)

REIDENTIFY_DELAY = 5.0
"""discord.py's own wait before identifying again after Discord dropped a session."""


def intents_for(config: DiscordAccountConfig) -> discord.Intents:
    """Servers, their messages and their content; members only where configured."""
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.message_content = True
    intents.members = config.members_intent
    return intents


def build_client(config: DiscordAccountConfig, shard: ShardSpec | None = None) -> discord.Client:
    """A client for one shard's gateway, or (no shard) for REST only.

    A plain `Client` with `shard_id`/`shard_count` per shard, not one `AutoShardedClient`:
    shards come and go one at a time as their leases do, and each keeps its own session.
    """
    # discord.py warns at every start that voice needs PyNaCl and davey; the bridge never
    # joins a voice channel, so the warnings would only worry whoever reads the log.
    discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False
    options: dict[str, object] = {
        "intents": intents_for(config),
        "max_ratelimit_timeout": config.max_ratelimit_timeout,
        "guild_ready_timeout": config.guild_ready_timeout,
        "chunk_guilds_at_startup": config.members_intent,
        "allowed_mentions": discord.AllowedMentions.none(),
    }
    if shard is not None and shard.sharded:
        options.update(shard_id=shard.id, shard_count=shard.count)
    return discord.Client(**options)  # type: ignore[arg-type]


def login_failure(exc: BaseException, config: DiscordAccountConfig, account: str
                  ) -> DiscordStartError:  # fmt: skip
    return start_error(exc, account, members=config.members_intent,
                       where=f"Discord at {config.api_base_url}")


async def log_in(client: discord.Client, config: DiscordAccountConfig, account: str) -> None:
    """REST login (who am I, which application); DiscordStartError when it fails."""
    failure: DiscordStartError | None = None
    try:
        await client.login(config.token.get_secret_value())
    except (discord.DiscordException, OSError, TimeoutError) as exc:
        failure = login_failure(exc, config, account)
    if failure is not None:
        # Raised outside the `except`, so no traceback chains the library's error.
        await client.close()
        raise failure


class IdentifyPacer:
    """This instance's IDENTIFYs, at least `interval` seconds apart (the first at once)."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._lock = asyncio.Lock()
        self._last: float | None = None

    async def wait(self) -> None:
        loop = asyncio.get_running_loop()
        async with self._lock:
            if self._last is not None and (delay := self._last + self.interval - loop.time()) > 0:
                await asyncio.sleep(delay)
            self._last = loop.time()

    def hook_for(self, client: discord.Client) -> None:
        """Make the client wait here before identifying again after Discord dropped its
        session (discord.py's hook for this). The first IDENTIFY is paced by `wait()` before
        the shard opens, so the pacing does not count against `ready_timeout`."""

        async def before_identify(shard_id: int | None, *, initial: bool = False) -> None:
            if not initial:
                await asyncio.sleep(REIDENTIFY_DELAY)
                await self.wait()

        client.before_identify_hook = before_identify  # type: ignore[method-assign]


class GatewayConnection:
    """One client's connect task, from open until close, and what ended it."""

    def __init__(
        self, client: discord.Client, config: DiscordAccountConfig, account: str,
        on_lost: Callable[[DiscordStartError], None],
    ) -> None:
        self.client = client
        self.config = config
        self.account = account
        self.on_lost = on_lost
        self._task: asyncio.Task[None] | None = None

    def _failure(self, exc: BaseException) -> DiscordStartError:
        return start_error(exc, self.account, members=self.config.members_intent,
                           where=f"the gateway at {self.config.gateway_url}")

    async def open(self) -> None:
        """Log in and connect; return once the client is ready, or raise DiscordStartError.
        Cancelled meanwhile (the lease was lost, the adapter stops), it closes the client."""
        await log_in(self.client, self.config, self.account)
        try:
            failure = await self._connect()
        except BaseException:
            await self.close()
            raise
        if failure is not None:
            await self.close()
            raise failure

    async def _connect(self) -> DiscordStartError | None:
        client = self.client
        self._task = asyncio.create_task(client.connect(reconnect=True), name="discord-gateway")
        ready = asyncio.create_task(client.wait_until_ready(), name="discord-ready")
        try:
            done, _ = await asyncio.wait(
                {self._task, ready}, timeout=self.config.ready_timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            ready.cancel()
        if ready in done:
            self._task.add_done_callback(self._ended)
            return None
        if self._task in done:
            return self._failure(self._ended_with(self._task))
        return self._failure(TimeoutError(
            f"the gateway at {self.config.gateway_url} did not become ready within "
            f"{self.config.ready_timeout:g}s"
        ))

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
