"""One platform's fake as the several-instance fault tests drive it: a `Scene` says how a
person speaks there, what the bridge's account and binding look like, what the chat showed of
the bridge's messages (`versions`, see tests/faults/replies.py), and which call is held around
a kill -9.

`door` is the platform call that posts a new message where the platform offers no way to
post idempotently (Telegram `sendMessage`, Slack `chat.postMessage`). A post the platform
applied whose answer never reached the dying bridge is posted again by the next instance —
the one documented limit (docs/reliability.md, *The limits*). The tests are about everything
else, so their kill lands while the next post waits at that door, never applied: new posts
are held, the kill waits until one is held (the post before it was answered and recorded),
then the held ones fail as "try again" and the survivor posts them. Discord needs no door:
its post journal looks a post up before posting it again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tests.fakes.discord import BOT_TOKEN as DISCORD_TOKEN
from tests.fakes.discord import FakeDiscord
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, FakeSlack
from tests.fakes.slack import UNPACED as SLACK_UNPACED
from tests.fakes.telegram import UNPACED, FakeTelegram, user

TELEGRAM_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ"
TELEGRAM_GROUP = -1001234567890
SLACK_CHANNEL = "C0123ABCD"
SLACK_ADA = "U0ADA"
DOOR_WAIT = 5.0
"""How long a kill waits for a post to reach the door; none in that time: kill anyway."""


@dataclass
class Scene:
    platform: str
    accounts: dict[str, Any]
    binding: dict[str, Any]
    say: Callable[[str], Awaitable[None]]
    """A person posts this text in the bound chat."""
    versions: Callable[[], Mapping[Hashable, Sequence[str | None]]]
    visible: Callable[[str], str]
    """What a reply's platform text says (Telegram puts the sender's name line above it)."""
    wait_until: Callable[[Callable[[], Any], float], Awaitable[Any]]
    hold_posts: Callable[[], None] | None = None
    release_posts: Callable[[], None] | None = None
    holding: Callable[[], int] | None = None

    async def at_the_door(self, kill: Callable[[], Awaitable[None]]) -> None:
        """Run `kill` while no post is half done (see the module's docstring)."""
        if self.hold_posts is None or self.release_posts is None or self.holding is None:
            await kill()
            return
        self.hold_posts()
        try:
            with contextlib.suppress(TimeoutError):  # nothing to post then: kill anyway
                await self.wait_until(self.holding, DOOR_WAIT)
            await kill()
        finally:
            self.release_posts()

    def config(self, store: str, bcn: dict[str, Any]) -> dict[str, Any]:
        return {"bcn": bcn, "store": store, "web": {"enabled": False},
                "accounts": self.accounts, "bindings": [self.binding]}  # fmt: skip


def _telegram_text(text: str) -> str:
    """A Telegram reply's text without the sender's name line above it."""
    return text.partition("\n")[2].strip() if "\n" in text else text.strip()


@contextlib.asynccontextmanager
async def telegram() -> AsyncIterator[Scene]:
    """Telegram in polling mode: the fake answers a second concurrent getUpdates with 409."""
    fake = FakeTelegram()
    fake.add_bot(TELEGRAM_TOKEN, "BridgeBot")
    fake.add_chat(TELEGRAM_GROUP, title="Team room")
    await fake.start()
    ada = user("Ada", user_id=601)

    async def say(text: str) -> None:
        fake.push_message(TELEGRAM_TOKEN, TELEGRAM_GROUP, ada, text)

    try:
        yield Scene(
            "telegram",
            accounts={"telegram": {"main": {
                "token": TELEGRAM_TOKEN, "api_base_url": fake.url, "poll_timeout": 1,
                "poll_interval": 0, "connect_timeout": 2, "read_timeout": 5,
            "send_limits": UNPACED,  # about exactly-once, not pacing: see UNPACED
            }}},
            binding={"channel": "telegram:main", "chat": str(TELEGRAM_GROUP), "group": "demo"},
            say=say,
            versions=lambda: {key: texts for key, texts in fake.versions.items()
                              if key[0] == TELEGRAM_GROUP},
            visible=_telegram_text,
            wait_until=fake.wait_until,
            hold_posts=lambda: fake.hold("sendMessage"),
            release_posts=fake.release,
            holding=lambda: fake.holding,
        )
    finally:
        await fake.stop()


@contextlib.asynccontextmanager
async def slack() -> AsyncIterator[Scene]:
    """Slack in Socket Mode: each instance opens its own connection, the fake sends an event
    on one of them and sends it again on another if that one closes before the ack."""
    fake = FakeSlack()
    fake.add_user(SLACK_ADA, "ada", display_name="Ada", real_name="Ada Lovelace")
    fake.add_channel(SLACK_CHANNEL, "ops")
    await fake.start()

    async def say(text: str) -> None:
        await fake.push(fake.human_message(SLACK_CHANNEL, SLACK_ADA, text))

    try:
        yield Scene(
            "slack",
            accounts={"slack": {"main": {
                "bot_token": BOT_TOKEN, "app_token": APP_TOKEN, "mode": "socket",
                "api_base_url": fake.api_url,
                "send_limits": SLACK_UNPACED,  # about exactly-once, not pacing: see UNPACED
            }}},
            binding={"channel": "slack:main", "chat": SLACK_CHANNEL, "group": "demo"},
            say=say,
            versions=lambda: {key: texts for key, texts in fake.versions.items()
                              if key[0] == SLACK_CHANNEL},
            visible=str.strip,
            wait_until=fake.wait_until,
            hold_posts=lambda: fake.hold("chat.postMessage"),
            release_posts=fake.release,
            holding=lambda: fake.holding,
        )
    finally:
        await fake.stop()


@contextlib.asynccontextmanager
async def discord() -> AsyncIterator[Scene]:
    """Discord's gateway: like Discord, the fake would give every session on the shard every
    event; the gateway lease keeps one instance connected."""
    async with FakeDiscord() as fake:
        guild = fake.add_guild("Team")
        general = fake.add_channel(guild, "general")
        ada = fake.add_member(guild, "ada", global_name="Ada")

        async def say(text: str) -> None:
            fake.push_message(general, ada, text)

        yield Scene(
            "discord",
            accounts={"discord": {"main": {
                "token": DISCORD_TOKEN, "api_base_url": fake.api_url,
                "gateway_url": fake.gateway_url, "guild_ready_timeout": 0.05,
                "ready_timeout": 10, "webhook_timeout": 5,
            }}},
            binding={"channel": "discord:main", "chat": str(general), "group": "demo"},
            say=say,
            versions=lambda: dict(fake.versions),  # the one channel
            visible=str.strip,
            wait_until=fake.wait_until,
        )


SCENES: dict[str, Callable[[], contextlib.AbstractAsyncContextManager[Scene]]] = {
    "telegram": telegram, "slack": slack, "discord": discord,
}


async def settle(seconds: float) -> None:
    """Room for a wrongly repeated or late edit to show up (nothing is timed)."""
    await asyncio.sleep(seconds)
