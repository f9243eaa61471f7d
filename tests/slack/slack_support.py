"""Real slack-bolt / slack_sdk against the fake Slack in `tests/fakes/slack.py`."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from adapters.slack import SlackAccountConfig, SlackAdapter
from bridge.config.sections import CommandNames
from bridge.core.binding import Binding
from bridge.core.model import Inbound, Outbound
from bridge.web.server import WebServer
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, SIGNING_SECRET, UNPACED, FakeSlack

for _name in ("NO_PROXY", "no_proxy"):
    os.environ[_name] = ",".join(
        filter(None, [os.environ.get(_name, ""), "127.0.0.1", "localhost"])
    )

CHANNEL = "C0123ABCD"
OTHER_CHANNEL = "C0999ZZZZ"
ADA = "U0ADA"
GRACE = "U0GRACE"
LOTBOT_USER, LOTBOT_BOT = "U0LOTBOT", "B0LOTBOT"
WAIT = 10.0
SECRETS = (BOT_TOKEN, APP_TOKEN, SIGNING_SECRET)


class Sink:
    """The adapter's sink: every Inbound it was handed, in order."""

    def __init__(self) -> None:
        self.items: list[Inbound] = []
        self._arrived = asyncio.Event()

    async def __call__(self, inbound: Inbound) -> None:
        self.items.append(inbound)
        self._arrived.set()

    async def wait_for(self, count: int = 1) -> list[Inbound]:
        """The first `count` Inbounds, once that many have arrived."""
        async with asyncio.timeout(WAIT):
            while len(self.items) < count:
                self._arrived.clear()
                await self._arrived.wait()
        return self.items[:count]

    def texts(self) -> list[str]:
        return [item.text for item in self.items]


def populate(fake: FakeSlack) -> FakeSlack:
    """The workspace every test starts with: two people, another app's bot, two channels."""
    fake.add_user(ADA, "ada", display_name="Ada", real_name="Ada Lovelace")
    fake.add_user(GRACE, "grace", real_name="Grace Hopper")
    fake.add_user(LOTBOT_USER, "lotbot", real_name="Lotbot", is_bot=True)
    fake.add_channel(CHANNEL, "ops")
    fake.add_channel(OTHER_CHANNEL, "random")
    return fake


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    server = populate(FakeSlack())
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
def sink() -> Sink:
    return Sink()


def account_config(fake: FakeSlack, **overrides: Any) -> SlackAccountConfig:
    """Fast test settings. Unpaced (`UNPACED`): these tests are about relaying, and the fake
    enforces no channel limit unless told; tests/slack/test_slack_pacing.py runs the
    default limit against a fake that enforces it."""
    settings: dict[str, Any] = {
        "bot_token": BOT_TOKEN,
        "app_token": APP_TOKEN,
        "signing_secret": SIGNING_SECRET,
        "api_base_url": fake.api_url,
        "ping_interval": 5,
        "connect_timeout": 5,
        "request_timeout": 5,
        "send_limits": UNPACED,
    }
    settings.update(overrides)
    return SlackAccountConfig.model_validate(settings)


def binding(chat: str = CHANNEL, **fields: Any) -> Binding:
    return Binding(channel="slack:main", chat=chat, group="team", **fields)


def outbound(text: str, *, sender: str = "Mantis", **fields: Any) -> Outbound:
    """What the core hands the adapter: `text` already mrkdwn, within max_length."""
    bound = fields.pop("binding", None) or binding()
    return Outbound(binding=bound, conversation="c1", sender_label=sender, text=text, **fields)


MakeAdapter = Callable[..., Awaitable[SlackAdapter]]


@pytest.fixture
async def make_adapter(fake: FakeSlack, sink: Sink) -> AsyncIterator[MakeAdapter]:
    """Start a SlackAdapter (account "main", bound to CHANNEL); all are stopped afterwards.

    In http mode pass `web`: the fake then POSTs its events to the adapter's route."""
    running: list[SlackAdapter] = []

    async def make(
        *,
        web: WebServer | None = None,
        commands: CommandNames | None = None,
        bindings: list[Binding] | None = None,
        state: Any = None,
        **overrides: Any,
    ) -> SlackAdapter:
        config = account_config(fake, **overrides)
        adapter = SlackAdapter("main", config, sink, web=web)
        adapter.use_bindings(bindings if bindings is not None else [binding()])
        if commands is not None:
            adapter.use_commands(commands)
        if state is not None:
            adapter.use_state(state)
        if web is not None:
            if not web.running:
                await web.start()
            fake.events_url = f"{web.url}{config.events_path('main')}"
        await adapter.start()
        running.append(adapter)
        return adapter

    yield make
    for adapter in running:
        await adapter.stop()


async def relayed_after(fake: FakeSlack, sink: Sink, *, channel: str = CHANNEL) -> list[str]:
    """Push one more human message and wait for it: everything pushed before it has been
    handled (the adapter relays in order), so `sink` now shows what was and was not relayed."""
    before = len(sink.items)
    marker = f"marker {before}"
    await fake.push(fake.human_message(channel, GRACE, marker))
    async with asyncio.timeout(WAIT):
        while marker not in sink.texts()[before:]:
            await sink.wait_for(len(sink.items) + 1)
    return sink.texts()[: sink.texts().index(marker, before)]
