"""Real python-telegram-bot against the fake Bot API server in `tests/fakes/telegram.py`."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adapters.telegram import TelegramAccountConfig, TelegramAdapter
from bridge.config.schema import BridgeConfig
from bridge.config.sections import CommandNames
from bridge.core.binding import Binding
from bridge.core.model import Outbound
from bridge.web.server import WebServer
from tests.fakes.telegram import FakeTelegram
from tests.support.received import Received
from tests.support.running_bridge import WAIT, BridgeStarter, RunningBridge, bridge_config

for _name in ("NO_PROXY", "no_proxy"):
    os.environ[_name] = ",".join(
        filter(None, [os.environ.get(_name, ""), "127.0.0.1", "localhost"])
    )

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ"
PUPPET_TOKEN = "987654321:BBKqTcvCH1vGWJxfSeofSAs0K5PALDsawZ"
GROUP = -1001234567890
BOT_USERNAME = "BridgeBot"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    server = FakeTelegram()
    server.add_bot(TOKEN, BOT_USERNAME)
    server.add_bot(PUPPET_TOKEN, "MantisBot")
    server.add_chat(GROUP, title="Team room")
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
def received() -> Received:
    return Received()


def account_config(fake: FakeTelegram, **overrides: Any) -> TelegramAccountConfig:
    """Fast test settings: short long polls, short timeouts."""
    settings: dict[str, Any] = {
        "token": TOKEN,
        "api_base_url": fake.url,
        "poll_timeout": 1,
        "poll_interval": 0,
        "connect_timeout": 2,
        "read_timeout": 2,
    }
    settings.update(overrides)
    return TelegramAccountConfig.model_validate(settings)


MakeAdapter = Callable[..., Awaitable[TelegramAdapter]]


@pytest.fixture
async def make_adapter(
    fake: FakeTelegram, received: Received
) -> AsyncIterator[MakeAdapter]:
    """Start a TelegramAdapter (account "main") on the fake; all are stopped afterwards."""
    running: list[TelegramAdapter] = []

    async def make(
        *, web: WebServer | None = None, commands: CommandNames | None = None, **overrides: Any
    ) -> TelegramAdapter:
        adapter = TelegramAdapter("main", account_config(fake, **overrides), received, web=web)
        if commands is not None:
            adapter.use_commands(commands)
        if web is not None and not web.running:
            await web.start()
        await adapter.start()
        running.append(adapter)
        return adapter

    yield make
    for adapter in running:
        await adapter.stop()


def binding(chat: int = GROUP, thread: str | None = None) -> Binding:
    return Binding(channel="telegram:main", chat=str(chat), thread=thread, group="team")


def outbound(text: str, *, sender: str = "Mantis", chat: int = GROUP, **fields: Any) -> Outbound:
    """What the core hands the adapter: `text` already Telegram HTML, within max_length."""
    thread = fields.pop("thread", None)
    return Outbound(
        binding=binding(chat, thread), conversation="c1", sender_label=sender, text=text, **fields
    )


@dataclass
class System(RunningBridge):
    """A whole bridge (embedded hub, relay, example bots) with its Telegram account on `fake`."""

    fake: FakeTelegram | None = None

    async def shown(self, predicate: Callable[[list[str]], Any]) -> Any:
        """Wait until `predicate(texts the bots posted, as shown now)` is truthy."""
        fake = self.fake
        assert fake is not None
        return await fake.wait_until(lambda: predicate(fake.bot_texts(GROUP)), WAIT)


StartSystem = Callable[..., Awaitable[System]]


def telegram_config(
    tmp_path: Path, fake: FakeTelegram, *, deliver: str = "raw",
    binding: dict[str, Any] | None = None, web: bool = False, **account: Any,
) -> BridgeConfig:
    """A bridge whose `telegram:main` account is bound to GROUP (group `demo`); `binding`
    adds keys to that binding, the other keywords go to the account."""
    return bridge_config(
        tmp_path,
        bindings=[{"channel": "telegram:main", "chat": str(GROUP), "group": "demo",
                   "protocol": {"enabled": True, "deliver": deliver}, **(binding or {})}],
        accounts={"telegram": {"main": account_config(fake, **account)}},
        web=web,
    )


@pytest.fixture
async def start_system(tmp_path: Path, fake: FakeTelegram) -> AsyncIterator[StartSystem]:
    """Start a bridge whose `telegram:main` account is bound to GROUP (group `demo`);
    `binding` adds keys to that binding, the other keywords go to the account."""
    starter = BridgeStarter(tmp_path)

    async def start(*, bots: bool = True, stream: bool = True, **settings: Any) -> System:
        config = telegram_config(tmp_path, fake, **settings)
        return await starter.start(config, bots=bots, stream=stream, wrap=System, fake=fake)

    yield start
    await starter.close()
