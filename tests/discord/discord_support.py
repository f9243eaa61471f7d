"""Real discord.py against the fake Discord server in `tests/fakes/discord.py`.

discord.py keeps its REST root and gateway address process-wide, so one fake Discord serves
a test at a time: the `fake` fixture starts one per test and every adapter of the test
points at it (the adapter claims the addresses while it runs and gives them back on stop).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from adapters.discord import DiscordAccountConfig, DiscordAdapter
from bridge.config.sections import CommandNames
from bridge.core.account_state import AccountState
from bridge.core.binding import Binding
from bridge.core.model import Inbound, Outbound
from bridge.store.memory import MemoryStore
from tests.fakes.discord import BOT_TOKEN, FakeDiscord, FakeGuild
from tests.support.received import Received

for _name in ("NO_PROXY", "no_proxy"):
    os.environ[_name] = ",".join(
        filter(None, [os.environ.get(_name, ""), "127.0.0.1", "localhost"])
    )

TOKEN = BOT_TOKEN
WAIT = 10.0


@dataclass
class Server:
    """The fake's one guild, as most tests use it."""

    guild: FakeGuild
    general: int
    forum: int
    ada: dict[str, Any]
    bob: dict[str, Any]
    lotbot: dict[str, Any]


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as server:
        yield server


@pytest.fixture
def server(fake: FakeDiscord) -> Server:
    guild = fake.add_guild("Team")
    return Server(
        guild=guild,
        general=fake.add_channel(guild, "general"),
        forum=fake.add_channel(guild, "help", forum=True),
        ada=fake.add_member(guild, "ada", global_name="Ada Lovelace", nick="Ada"),
        bob=fake.add_member(guild, "bob"),
        lotbot=fake.add_member(guild, "lotbot", global_name="Lotbot", bot=True),
    )


@pytest.fixture
def received() -> Received:
    return Received()


@pytest.fixture
def state() -> AccountState:
    """One account's durable records; shared by every adapter of a test (a restart)."""
    return AccountState(MemoryStore(), "discord:main")


def account_config(fake: FakeDiscord, **overrides: Any) -> DiscordAccountConfig:
    settings: dict[str, Any] = {
        "token": TOKEN,
        "api_base_url": fake.api_url,
        "gateway_url": fake.gateway_url,
        "guild_ready_timeout": 0.05,
        "ready_timeout": 10,
        "webhook_timeout": 5,
    }
    settings.update(overrides)
    return DiscordAccountConfig.model_validate(settings)


def binding(chat: int, **fields: Any) -> Binding:
    return Binding(channel="discord:main", chat=str(chat), group="team", **fields)


def outbound(text: str, chat: int, *, sender: str = "Mantis", **fields: Any) -> Outbound:
    """What the core hands the adapter: `text` already Discord markdown, within max_length."""
    bound = fields.pop("binding", None) or binding(chat)
    return Outbound(binding=bound, conversation="c1", sender_label=sender, text=text, **fields)


MakeAdapter = Callable[..., Awaitable[DiscordAdapter]]


@pytest.fixture
async def make_adapter(
    fake: FakeDiscord, received: Received, state: AccountState
) -> AsyncIterator[MakeAdapter]:
    """Start a DiscordAdapter (account "main") on the fake; all are stopped afterwards."""
    running: list[DiscordAdapter] = []

    async def make(
        *, bindings: list[Binding] | None = None, commands: CommandNames | None = None,
        sink: Callable[[Inbound], Awaitable[None]] | None = None, start: bool = True,
        own_state: AccountState | None = None, **overrides: Any,
    ) -> DiscordAdapter:
        adapter = DiscordAdapter("main", account_config(fake, **overrides), sink or received)
        adapter.use_state(own_state or state)
        adapter.use_bindings(bindings or [])
        if commands is not None:
            adapter.use_commands(commands)
        running.append(adapter)
        if start:
            await adapter.start()
        return adapter

    yield make
    for adapter in running:
        await adapter.stop()
