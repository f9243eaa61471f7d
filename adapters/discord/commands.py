"""Slash commands: the chat commands in Discord's native `/` menu, and answering them.

The core runs commands from their text, so `/ask bot:Rules task:what is 6×7` becomes the
text `/ask Rules what is 6×7` in an `Inbound` whose message id is the interaction id; the
core's answer is a notice replying to that id, and the adapter sends it through the
interaction. Discord wants a first answer within 3 s, so every command is acknowledged at
once: `/ask` with a short ephemeral "asked" line (its real outcome is the REQUEST posted in
the channel), the others by deferring ("… is thinking"), which the core's answer replaces.
`/requests` answers only the person who asked; `/stop` and `/new` change the conversation
for everyone, so everyone sees their answer. An interaction token works for 15 minutes:
a later answer (the bridge was down) goes to the channel as an ordinary message.

Commands are registered per bound server (guild commands appear at once; global ones take
up to an hour), and only when the command set changed: its hash is kept in the store,
because Discord allows 200 command creates per server per day. The check and the PUT run
under a lease per server (`command-sync:<guild>`), so two instances that start together
sync once: the second waits, then finds the first one's hash.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

import aiohttp
import discord
from discord import app_commands

from adapters.discord.short_leases import under_lease
from bridge.config.sections import CommandNames
from bridge.core.account_state import AccountState

log = logging.getLogger(__name__)

SYNC_LEASE_TTL = 120.0
"""Renewed while a sync runs (a PUT, and discord.py's waits on its 429s up to
`max_ratelimit_timeout`); how long an instance that died mid-sync delays the next one."""
SYNC_RETRY = 2.0

INTERACTION_LIFETIME = timedelta(minutes=15)
ANSWER_MARGIN = timedelta(seconds=30)
"""Do not start an answer through a token about to expire; post in the channel instead."""


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """One chat command as Discord shows it, and how its answer is shown."""

    role: str
    """The `CommandNames` field (the configured word may differ)."""
    description: str
    options: tuple[tuple[str, str], ...] = ()
    ephemeral: bool = True
    deferred: bool = True


SLASH_COMMANDS = (
    SlashCommand("ask", "Ask a bot for something; the bridge tracks it as a request",
                 (("bot", "The bot's name"), ("task", "What it should do")), deferred=False),
    SlashCommand("requests", "List the open bot requests in this channel"),
    SlashCommand("stop", "Stop the bot reply that is running here", ephemeral=False),
    SlashCommand("new", "Start a fresh conversation with the bots here", ephemeral=False),
)

Invoked = Callable[[discord.Interaction, SlashCommand, str], Awaitable[None]]
"""Called with the interaction, its command and the command's text form."""


def app_commands_for(names: CommandNames, invoked: Invoked) -> list[app_commands.Command]:
    """The enabled commands under their configured names."""
    enabled = names.enabled()
    found = []
    for spec in SLASH_COMMANDS:
        if spec.role in enabled:
            found.append(_command(spec, str(enabled[spec.role]), invoked))
    return found


def _command(spec: SlashCommand, name: str, invoked: Invoked) -> app_commands.Command:
    if spec.options:
        async def with_task(interaction: discord.Interaction, bot: str, task: str) -> None:
            await invoked(interaction, spec, f"/{name} {bot} {task}")

        callback = app_commands.describe(**dict(spec.options))(with_task)
    else:
        async def bare(interaction: discord.Interaction) -> None:
            await invoked(interaction, spec, f"/{name}")

        callback = bare
    return app_commands.Command(name=name, description=spec.description, callback=callback)


async def acknowledge(interaction: discord.Interaction, spec: SlashCommand, text: str) -> None:
    """Answer within Discord's 3 seconds, before the core has even seen the command."""
    if spec.deferred:
        await interaction.response.defer(ephemeral=spec.ephemeral, thinking=True)
    else:
        await interaction.response.send_message(f"➡️ `{text}`", ephemeral=spec.ephemeral)


class CommandSync:
    """Registers the commands per bound server, only when they changed."""

    def __init__(self, tree: app_commands.CommandTree, state: AccountState, account: str) -> None:
        self.tree = tree
        self.state = state
        self.account = account

    def install(self, commands: list[app_commands.Command], guild_ids: Iterable[int]) -> None:
        """Make the tree answer these commands in these servers (before any sync)."""
        guilds = [discord.Object(guild_id) for guild_id in sorted(set(guild_ids))]
        for guild in guilds:
            self.tree.clear_commands(guild=guild)
        for command in commands:
            if guilds:
                self.tree.add_command(command, guilds=guilds, override=True)

    def digest(self, guild: discord.abc.Snowflake) -> str:
        payload = [command.to_dict(self.tree) for command in self.tree.get_commands(guild=guild)]
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    async def sync_once(self, guild: discord.abc.Snowflake) -> bool:
        """`sync_if_changed` under the server's lease, waiting while another instance holds it."""
        return await under_lease(self.state, f"command-sync:{guild.id}",
                                 lambda: self.sync_if_changed(guild), ttl=SYNC_LEASE_TTL,
                                 retry=SYNC_RETRY)

    async def sync_if_changed(self, guild: discord.abc.Snowflake) -> bool:
        """PUT the guild's commands unless the store says Discord has exactly these."""
        key = f"commands:{guild.id}"
        digest = self.digest(guild)
        record = await self.state.get(key)
        if record is not None and record.get("hash") == digest:
            await self.state.put(key, record)  # still relied on: keep it past the retention
            return False
        try:
            await self.tree.sync(guild=guild)
        except discord.Forbidden:
            log.warning(
                "discord:%s may not register slash commands in server %s: invite the bot "
                "with the applications.commands scope (`bcn-bridge discord invite-url`); "
                "the text commands work meanwhile", self.account, guild.id,
            )
            return False
        await self.state.put(key, {"hash": digest})
        log.info("discord:%s registered its slash commands in server %s", self.account, guild.id)
        return True


@dataclass(frozen=True, slots=True)
class InteractionRecord:
    """What answering a slash command later needs; kept in the store, token included
    (it is valid for 15 minutes only, and never logged)."""

    id: str
    token: str
    application_id: str
    ephemeral: bool
    channel_id: str

    @classmethod
    def of(cls, interaction: discord.Interaction, spec: SlashCommand) -> InteractionRecord:
        return cls(str(interaction.id), interaction.token, str(interaction.application_id),
                   spec.ephemeral, str(interaction.channel_id))

    @classmethod
    def from_record(cls, record: dict[str, object]) -> InteractionRecord | None:
        try:
            return cls(str(record["id"]), str(record["token"]), str(record["application_id"]),
                       bool(record["ephemeral"]), str(record["channel_id"]))
        except KeyError:
            return None

    def to_record(self) -> dict[str, object]:
        return asdict(self)

    def usable(self, now: datetime) -> bool:
        created = discord.utils.snowflake_time(int(self.id))
        return now < created + INTERACTION_LIFETIME - ANSWER_MARGIN

    def webhook(self, session: aiohttp.ClientSession) -> discord.Webhook:
        """The interaction's followup webhook (an application webhook: it can be ephemeral)."""
        data = {"id": self.application_id, "type": 3, "token": self.token}
        return discord.Webhook(data, session=session)  # type: ignore[arg-type]
