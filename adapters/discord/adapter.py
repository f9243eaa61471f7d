"""The Discord adapter: one bot account (optionally some of its shards), via discord.py.

With several bridge instances on one store, each shard's gateway runs in exactly one of
them at a time, under the shard's lease (`gateway_lease.py`); every instance, gateway or
not, logs in over REST and can send, since the outbox may hand it any chat. Per running
shard there is one discord.py client (`shards.py`): shards come and go one at a time as
their leases do, each with its own session, cache, command tree and catch-up gate.

Inbound, every message, edit, delete and slash command of a channel passes its shard's
gate (closed while that shard catches up on what it missed) and then the channel's lock,
in gateway order, before it becomes an `Inbound`; the bridge's own posts are dropped here,
by id (its bot user, its webhooks), because Discord often delivers the echo of a post
before the REST call that made it has returned. Outbound, bots' replies go through the
bridge's webhook of the parent channel under each bot's name, or — without Manage
Webhooks, or with `display: prefix` — as the bridge's bot under a bold name; a command's
answer goes through its interaction while that is still possible. Nothing here sleeps on a
429: the outbox owns waiting and order, so every failure becomes a `SendError`. A bot's
question shows as a card with buttons, and a press on one goes to the core as a tap,
answered within Discord's 3 seconds (`cards.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import aiohttp
import discord
from discord import app_commands
from pydantic import BaseModel

from adapters.discord import endpoints
from adapters.discord.backfill import Backfill, ChannelLocks, Cursors, HistoryChannel
from adapters.discord.cards import CardTaps, is_card_interaction
from adapters.discord.channels import ChannelLookup
from adapters.discord.commands import (
    InteractionRecord,
    SlashCommand,
    acknowledge,
    app_commands_for,
)
from adapters.discord.config import DiscordAccountConfig
from adapters.discord.directory import ServerDirectory
from adapters.discord.errors import DiscordStartError, send_error
from adapters.discord.gateway_lease import GatewayLease
from adapters.discord.inbound import (
    CHANNEL_TYPE,
    Location,
    ResolvedMentions,
    deleted_inbound,
    location_of,
    sender_of,
    to_inbound,
)
from adapters.discord.outbound import MAX_TEXT
from adapters.discord.posting import DISCORD_ERRORS, Poster
from adapters.discord.redaction import protect_tokens
from adapters.discord.shards import Shard, ShardSpec, shards_for
from adapters.discord.startup import IdentifyPacer, build_client, log_in
from adapters.discord.webhooks import ChannelWebhooks
from bridge.background import Background
from bridge.core.adapter import (
    Adapter,
    Capabilities,
    Diagnosis,
    InboundSink,
    PermanentSendError,
    TransientSendError,
)
from bridge.core.binding import Binding
from bridge.core.model import Inbound, Outbound, PlatformRef, Sender
from bridge.text import StaticDirectory, from_platform

if TYPE_CHECKING:
    from bridge.web.server import WebServer

log = logging.getLogger(__name__)

SEND_WAIT = 10.0
"""How long a send waits for the REST login before the outbox is told to retry."""

Handler = Callable[..., Awaitable[None]]


class DiscordAdapter(Adapter):
    """Relays one Discord bot account; BCN bots post through webhooks under their names."""

    channel_type: ClassVar[str] = CHANNEL_TYPE
    capabilities: ClassVar[Capabilities] = Capabilities(
        dialect="discord",
        max_length=MAX_TEXT,
        can_edit=True,
        can_delete=True,
        custom_sender=True,
        threads=True,
        typing=True,
        min_edit_interval=1.5,
        cards=True,
        # `_is_own` drops every post of the bridge by id: its bot user (posts, command and
        # card answers) and its webhooks (remembered in the store, any instance, found
        # again after a restart), even an echo that beats the REST call that made it.
        echoes_own_posts=False,
    )
    config_model: ClassVar[type[BaseModel]] = DiscordAccountConfig
    settings: DiscordAccountConfig

    def __init__(
        self, account: str, config: BaseModel, sink: InboundSink, *, web: WebServer | None = None
    ) -> None:
        super().__init__(account, config, sink, web=web)
        self._rest: discord.Client | None = None
        """Logged in over REST only: posts, edits, lookups, with or without a gateway."""
        self._bot_id = 0
        self._channels: ChannelLookup | None = None
        self._gateways: list[GatewayLease] = []
        self._shards: dict[ShardSpec, Shard] = {}
        """The shards this instance opened (a closed one stays until replaced)."""
        self._session: aiohttp.ClientSession | None = None
        self._webhooks: ChannelWebhooks | None = None
        self._poster: Poster | None = None
        self._cursors: Cursors | None = None
        self._locks = ChannelLocks()
        self._stopping = False
        self._ready = asyncio.Event()
        """Set once logged in over REST: sending works from then on."""
        self._keepers = Background(f"discord:{account} gateway leases")
        self._background = Background(f"discord:{account}")
        self._people = ServerDirectory()
        self._claimed = False
        self._cards = CardTaps(account, lambda: self.taps, self._locate, self._background)

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        config = self.settings
        self._stopping = False
        protect_tokens(config.token.get_secret_value())
        try:
            endpoints.claim(config.api_base_url, config.gateway_url)
        except endpoints.EndpointConflict as exc:
            raise DiscordStartError(f"{self.channel}: {exc}") from None
        self._claimed = True
        try:
            await self._open()
        except BaseException:
            await self._close()
            raise
        rest = self._rest
        assert rest is not None and rest.user is not None
        running = ", ".join(shard.spec.name for shard in self.running_shards()) or "none"
        log.info("discord:%s connected as %s (id %s); gateway shards run here: %s",
                 self.account, rest.user.name, rest.user.id, running)

    async def _open(self) -> None:
        config = self.settings
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=config.webhook_timeout)
        )
        self._webhooks = ChannelWebhooks(self.account, self.state, self._session)
        self._cursors = Cursors(self.state)
        await self._webhooks.remember_bound(
            [int(b.chat) for b in self.bindings if b.chat.isdigit()]
        )
        rest = build_client(config)
        await log_in(rest, config, self.account)
        assert rest.user is not None
        self._rest, self._bot_id = rest, rest.user.id
        self._webhooks.bot_id = self._people.own_id = rest.user.id
        self._channels = ChannelLookup(rest, self._shard_clients)
        self._poster = Poster(self.channel, rest, self._channels, config, self.state,
                              self._webhooks, self._session)
        self._ready.set()
        pacer = IdentifyPacer(config.identify_interval)
        self._gateways = [
            GatewayLease(self.state, self.account, spec, partial(self._connect_shard, pacer))
            for spec in shards_for(config)
        ]
        for gateway in self._gateways:
            self._keepers.spawn(gateway.run(), name=f"{gateway.who} lease")
        # A shard free at start is running when start() returns; its errors are start errors.
        await asyncio.gather(*(gateway.first for gateway in self._gateways))
        self._background.spawn(self._check_bindings(), name=f"{self.channel}:bindings")

    async def _connect_shard(self, pacer: IdentifyPacer, spec: ShardSpec) -> Shard:
        """Open one shard's gateway (this instance holds its lease); ready when it returns."""
        client = build_client(self.settings, spec)
        pacer.hook_for(client)
        shard = Shard(spec, client, self.settings, self.account, self.state)
        shard.tree.error(self._on_command_error)
        for name, handler in self._shard_handlers().items():
            setattr(client, name, partial(handler, shard))
        for name, handler in self._server_handlers().items():
            setattr(client, name, handler)
        self._shards[spec] = shard
        try:
            await pacer.wait()
            await shard.open()
        except BaseException:
            await shard.close()  # no longer one of this instance's open shards
            raise
        return shard

    def _shard_handlers(self) -> dict[str, Handler]:
        """Gateway events that need their shard (its gate, its client)."""
        return {
            "on_connect": self._on_connect,
            "on_ready": self._on_ready,
            "on_message": self._on_message,
            "on_raw_message_edit": self._on_raw_message_edit,
            "on_raw_message_delete": self._on_raw_message_delete,
            "on_interaction": self._on_interaction,
        }

    def _server_handlers(self) -> dict[str, Handler]:
        return {
            "on_guild_role_update": self._on_permissions_changed,
            "on_guild_channel_update": self._on_permissions_changed,
            "on_member_update": self._on_member_changed,
            "on_member_join": self._on_member_changed,
            "on_member_remove": self._on_member_changed,
        }

    def health(self) -> str | None:
        """Up while logged in over REST (every instance sends) and no shard this instance
        ran broke for good; a standby without a gateway is up: it sends what it is given."""
        if not self._ready.is_set():
            return super().health() or "not logged in to Discord"
        broken = [gateway for gateway in self._gateways if gateway.broken is not None]
        if broken:
            return "; ".join(str(gateway.broken) for gateway in broken)
        return super().health()

    async def diagnose(self) -> list[Diagnosis]:
        from adapters.discord.doctor import diagnose

        return await diagnose(self.account, self.settings, self.bindings)

    def running_shards(self) -> list[Shard]:
        """The shards whose gateway this instance runs now (connected and ready)."""
        return [gateway.shard for gateway in self._gateways if gateway.shard is not None]

    def _open_shards(self) -> list[Shard]:
        """Running shards and those still connecting (their caches fill meanwhile)."""
        return [shard for shard in self._shards.values() if not shard.closed]

    def _shard_clients(self) -> list[discord.Client]:
        return [shard.client for shard in self._open_shards()]

    async def stop(self) -> None:
        if self._rest is None and not self._claimed:
            return
        await self._close()
        log.info("discord:%s stopped", self.account)

    async def _close(self) -> None:
        self._stopping = True
        self._ready.clear()
        # Each lease keeper closes its shard's gateway, then releases the lease: a standby
        # takes over at once, and never while this instance still relays.
        await self._keepers.cancel_all()
        await self._background.cancel_all()
        for shard in self._open_shards():
            await shard.close()
        self._shards.clear()
        self._gateways = []
        rest, self._rest = self._rest, None
        if rest is not None:
            await rest.close()
        self._poster = self._channels = None
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        if self._claimed:
            self._claimed = False
            endpoints.release()

    # -- gateway events ----------------------------------------------------------------

    async def _on_connect(self, shard: Shard) -> None:
        """A new session (not a resume): hold live events until history is caught up."""
        shard.gate.clear()

    async def _on_ready(self, shard: Shard) -> None:
        if not shard.ready_once:
            shard.ready_once = True
            guilds = self._bound_guilds(shard.client)
            shard.commands.install(
                app_commands_for(self.commands, partial(self._on_slash_command, shard)), guilds
            )
            shard.background.spawn(self._sync_commands(shard, guilds),
                                   name=f"{self.channel}:commands")
        shard.background.spawn(self._catch_up(shard), name=f"{self.channel}:backfill")

    async def _catch_up(self, shard: Shard) -> None:
        """What this shard's channels missed: while no instance ran it, or since the session
        Discord could not resume."""
        assert self._cursors is not None
        self._cursors.forget()
        backfill = Backfill(self.account, self._cursors, self._locks, self._relay,
                            self.settings.backfill_limit)
        try:
            await backfill.catch_up(self._history_channels(shard.client))
        finally:
            shard.caught_up = backfill.relayed
            shard.gate.set()

    async def _sync_commands(self, shard: Shard, guilds: set[int]) -> None:
        for guild_id in sorted(guilds):
            try:
                await shard.commands.sync_once(discord.Object(guild_id))
            except DISCORD_ERRORS as exc:
                log.warning("discord:%s could not register slash commands in server %s: %s",
                            self.account, guild_id, send_error(exc, "sync"))

    async def _on_permissions_changed(self, *_: object) -> None:
        if self._webhooks is not None:
            self._webhooks.permissions_changed()

    async def _on_member_changed(self, *members: object) -> None:
        for member in members:
            guild = getattr(member, "guild", None)
            if guild is not None:
                self._people.changed(guild.id)
        await self._on_permissions_changed()

    # -- inbound -----------------------------------------------------------------------

    async def _live(self, shard: Shard) -> bool:
        """Wait at the shard's gate (first `await` of every handler, so they keep gateway
        order); False once the adapter stops or the shard closed (its lease was lost: the
        new holder relays from here)."""
        await shard.gate.wait()
        return not self._stopping and not shard.closed

    async def _on_message(self, shard: Shard, message: discord.Message) -> None:
        if not await self._live(shard):
            return
        async with self._locks(message.channel.id):
            if message.id in shard.caught_up:
                return  # posted after READY, so the catch-up READY started relayed it
            await self._relay(message)

    async def _on_raw_message_edit(
        self, shard: Shard, payload: discord.RawMessageUpdateEvent
    ) -> None:
        if not await self._live(shard):
            return
        async with self._locks(payload.channel_id):
            message = payload.message
            if message.edited_at is None:
                return  # Discord resolved a link preview; nobody edited anything
            if message.author.bot or message.webhook_id is not None:
                return  # bots' edits are their replies streaming, not news
            await self._relay(message, edit=True)

    async def _on_raw_message_delete(
        self, shard: Shard, payload: discord.RawMessageDeleteEvent
    ) -> None:
        if not await self._live(shard):
            return
        async with self._locks(payload.channel_id):
            sender, text = await self._deleted_author(payload)
            if sender is None:
                return
            channel = shard.client.get_channel(payload.channel_id)
            location = await self._locate(channel, payload.channel_id)
            await self.sink(deleted_inbound(
                payload.message_id, sender, text, account=self.account, location=location,
                timestamp=datetime.now(UTC),
            ))

    async def _deleted_author(
        self, payload: discord.RawMessageDeleteEvent
    ) -> tuple[Sender | None, str]:
        """Who wrote a deleted human message and what it said, as far as known."""
        cached = payload.cached_message
        if cached is not None:
            if cached.author.bot or cached.webhook_id is not None or await self._is_own(cached):
                return None, ""
            text = from_platform(cached.content, "discord", directory=ResolvedMentions.of(cached))
            return sender_of(cached.author), text
        record = await self.state.get(f"author:{payload.message_id}")
        if record is None:
            return None, ""  # not a message the bridge relayed with edits on
        return Sender(str(record["id"]), str(record["name"]), bool(record.get("is_bot"))), ""

    async def _relay(self, message: discord.Message, *, edit: bool = False) -> None:
        """One message (live or from history) to the core, unless it is the bridge's own."""
        if await self._is_own(message):
            return
        location = await self._locate(message.channel, message.channel.id)
        bound = location.chat_id in self.bound_chats
        self._note_channel(message, location)
        inbound = to_inbound(message, account=self.account, location=location, is_edit=edit)
        if message.guild is not None:
            self._people.saw(message.guild.id, [message.author, *message.mentions])
        if inbound is not None:
            await self.sink(inbound)
            if bound and not edit and self._relays_edits(inbound):
                await self.state.put(f"author:{message.id}", asdict(inbound.sender))
        if bound and not edit and self._cursors is not None:
            await self._cursors.advance(message.channel.id, message.id)

    async def _is_own(self, message: discord.Message) -> bool:
        if message.author.id == self._bot_id:
            return True
        return (
            message.webhook_id is not None
            and self._webhooks is not None
            and await self._webhooks.is_own(message.webhook_id)
        )

    def _relays_edits(self, inbound: Inbound) -> bool:
        return any(
            binding.relay_edits
            for binding in self.bindings
            if binding.matches(self.channel, inbound.chat_id, inbound.thread_id)
        )

    async def _locate(self, channel: object, channel_id: int) -> Location:
        """Where a message belongs; a thread discord.py has not cached is fetched once."""
        if channel is None or isinstance(channel, discord.PartialMessageable):
            channel = await self._fetch_channel(channel_id)
        return location_of(channel, channel_id, self.bound_chats)

    async def _fetch_channel(self, channel_id: int) -> object:
        if self._channels is None:
            return None
        try:
            return await self._channels.get(channel_id)
        except DISCORD_ERRORS as exc:
            log.debug("discord:%s could not look up channel %s: %s",
                      self.account, channel_id, exc)
            return None

    def _note_channel(self, message: discord.Message, location: Location) -> None:
        """Log each server channel once, so people can find the id to put in a binding."""
        guild = message.guild
        if guild is None or not self.first_sight(location.chat_id):
            return
        channel = guild.get_channel_or_thread(int(location.chat_id))
        name = getattr(channel, "name", location.chat_id)
        self.note_chat(location.chat_id, f'sees #{name} ({location.chat_id}) in server '
                       f'"{guild.name}"', once=False)

    async def _on_slash_command(
        self, shard: Shard, interaction: discord.Interaction, spec: SlashCommand, text: str
    ) -> None:
        """Acknowledge at once (3 s), remember the interaction — in the store, so whichever
        instance ends up with the answer can send it — and hand its text to the core."""
        channel_id = interaction.channel_id or 0
        location = await self._locate(interaction.channel, channel_id)
        if not self._bound(location):
            await self._not_bound_here(interaction)
            return
        try:
            await acknowledge(interaction, spec, text)
        except DISCORD_ERRORS as exc:
            log.warning("discord:%s could not acknowledge %s (%s); its answer goes to the "
                        "channel", self.account, text.split()[0], send_error(exc, "acknowledge"))
        record = InteractionRecord.of(interaction, spec)
        await self.state.put(f"interaction:{record.id}", record.to_record())
        inbound = Inbound(
            channel_type=CHANNEL_TYPE,
            account=self.account,
            chat_id=location.chat_id,
            thread_id=location.thread_id,
            message_id=record.id,
            sender=sender_of(interaction.user),
            text=from_platform(text, "discord"),
            timestamp=interaction.created_at,
            raw={"interaction_id": record.id, "channel_id": str(channel_id)},
        )
        if not await self._live(shard):
            return
        async with self._locks(channel_id):
            await self.sink(inbound)

    async def _on_interaction(self, shard: Shard, interaction: discord.Interaction) -> None:
        """A press on a card's button or its modal's submit (slash commands go through the
        command tree). Not held at the shard's gate: Discord wants an answer within 3 s, and
        a tap is settled by the store, not by its place among the channel's messages."""
        if self._stopping or shard.closed or not is_card_interaction(interaction):
            return
        await self._cards.handle(interaction)

    def _bound(self, location: Location) -> bool:
        return any(binding.matches(self.channel, location.chat_id, location.thread_id)
                   for binding in self.bindings)

    async def _not_bound_here(self, interaction: discord.Interaction) -> None:
        """A command in a channel of a bound server that no binding names: say so at once."""
        try:
            await interaction.response.send_message(
                "This channel is not connected to any bots (no binding names it).",
                ephemeral=True,
            )
        except DISCORD_ERRORS as exc:
            log.debug("discord:%s could not answer a command in an unbound channel: %s",
                      self.account, exc)

    async def _on_command_error(
        self, interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        log.warning("discord:%s could not run a slash command: %s", self.account, error)

    # -- bindings and servers ----------------------------------------------------------

    def _bound_channels(self, client: discord.Client) -> list[tuple[Binding, Any]]:
        """Each binding with the channel a shard's client has for it (None: not on this
        shard, or the bot cannot see it)."""
        return [
            (binding, client.get_channel(int(binding.chat)) if binding.chat.isdigit() else None)
            for binding in self.bindings
        ]

    def _bound_guilds(self, client: discord.Client) -> set[int]:
        return {channel.guild.id for _, channel in self._bound_channels(client)
                if getattr(channel, "guild", None) is not None}

    def _history_channels(self, client: discord.Client) -> list[HistoryChannel]:
        """Every channel of this shard whose history backfill reads: bound channels and
        their threads."""
        found: dict[int, HistoryChannel] = {}
        for binding, channel in self._bound_channels(client):
            guild = getattr(channel, "guild", None)
            if guild is None:
                continue
            if binding.thread is not None:
                thread = guild.get_thread(int(binding.thread)) if binding.thread.isdigit() else None
                if thread is not None:
                    found[thread.id] = thread
                continue
            if isinstance(channel, HistoryChannel):
                found[channel.id] = channel
            for thread in guild.threads:
                if thread.parent_id == channel.id:
                    found[thread.id] = thread
        return list(found.values())

    async def _check_bindings(self) -> None:
        """Warn about bound channels the bot cannot see. One no running shard has is asked
        for over REST: it may be on a shard another instance runs (and a standby then has
        it at hand for posting)."""
        assert self._channels is not None
        for binding in self.bindings:
            if binding.chat.isdigit() and self._channels.cached(int(binding.chat)) is not None:
                continue
            try:
                if binding.chat.isdigit():
                    await self._channels.get(int(binding.chat))
                    continue
            except (discord.NotFound, discord.Forbidden):
                pass
            except DISCORD_ERRORS as exc:
                log.debug("discord:%s could not check channel %s: %s",
                          self.account, binding.chat, exc)
                continue
            log.warning(
                "discord:%s cannot see channel %s of a binding: check the id (Developer "
                "Mode → right-click the channel → Copy Channel ID) and that the bot is in "
                "its server with View Channel (`bcn-bridge discord invite-url`)",
                self.account, binding.chat,
            )

    # -- outbound ----------------------------------------------------------------------

    async def _poster_ready(self) -> Poster:
        """The poster, once logged in over REST (no gateway needed); the outbox may call
        before `start()` has returned (it resumes queued replies first)."""
        if not self._ready.is_set():
            try:
                async with asyncio.timeout(SEND_WAIT):
                    await self._ready.wait()
            except TimeoutError:
                raise TransientSendError(f"{self.channel} is not connected to Discord") from None
        assert self._poster is not None
        return self._poster

    async def send(self, out: Outbound) -> PlatformRef:
        return await (await self._poster_ready()).send(out)

    async def edit(self, ref: PlatformRef, out: Outbound) -> None:
        await (await self._poster_ready()).edit(ref, out)

    async def delete(self, ref: PlatformRef) -> None:
        await (await self._poster_ready()).delete(ref)

    async def typing(self, chat_id: str, thread_id: str | None = None) -> None:
        """A cosmetic hint: failures are logged, never raised, and never retried."""
        if self._poster is None or not self._ready.is_set():
            return
        try:
            await self._poster.typing(chat_id, thread_id)
        except (*DISCORD_ERRORS, PermanentSendError) as exc:
            log.debug("discord:%s typing indicator failed: %s", self.account, exc)

    def directory(self, chat_id: str) -> StaticDirectory | None:
        """Members of the channel's server by name, so a bot's `@Ada` pings Ada (as far as
        this instance knows them: the members and writers its shards saw)."""
        lookup = self._channels
        channel = lookup.cached(int(chat_id)) if lookup and chat_id.isdigit() else None
        guild = getattr(channel, "guild", None)
        if guild is None:
            return None
        return self._people.for_guild(guild)
