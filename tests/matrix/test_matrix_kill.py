"""kill -9 of a real `bcn-bridge run` in the middle of a streamed reply to a Matrix room,
then a restart: the reply is completed once — one event, its latest replacement the whole
text. The hub runs in its own process, so the bot keeps streaming while the bridge is dead."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from matrix_support import BRIDGE_USER, bot_messages
from test_matrix_e2e import joined

from bridge.bcn.bot import Bot, IncomingMessage, Run
from bridge.retry import Backoff
from tests.support.bridge_process import BridgeProcess, HubProcess, free_port, write_config

LINK_TOKEN = "link-token-of-the-matrix-kill-test"
SLOW = "@bcn_slow:localhost"
WORDS = [f"word{n:02d} " for n in range(24)]
WAIT = 30.0


def slow_bot(hub_port: int, tmp_path: Path) -> Bot:
    bot = Bot(f"ws://127.0.0.1:{hub_port}/ws/bot", name="Slow",
              token_file=tmp_path / "slow.token", backoff=Backoff(initial=0.1, maximum=1.0))

    @bot.on_message
    async def answer(msg: IncomingMessage, run: Run) -> None:
        for word in WORDS:
            await run.delta(word)
            await asyncio.sleep(0.15)
        await run.final("".join(WORDS).strip())

    return bot


def quick_bot(hub_port: int, tmp_path: Path) -> Bot:
    bot = Bot(f"ws://127.0.0.1:{hub_port}/ws/bot", name="Slow",
              token_file=tmp_path / "slow.token", backoff=Backoff(initial=0.1, maximum=1.0))

    @bot.on_message
    async def answer(msg: IncomingMessage, run: Run) -> None:
        await run.final(f"got: {msg.text}")

    return bot


def configs(tmp_path: Path, homeserver: Any, room: str, hub_port: int) -> tuple[Path, Path]:
    hub = write_config(tmp_path / "hub.yaml", {"hub": {
        "listen": f"127.0.0.1:{hub_port}", "data_dir": str(tmp_path / "hub"),
        "link_tokens": [LINK_TOKEN], "bot_reply_default": "observe",
        "groups": [{"id": "demo", "driver": "Slow", "bots": ["Slow"], "auto_join": True}]}})
    account = yaml.safe_load(homeserver.account().model_dump_json())
    account["as_token"] = homeserver.account().as_token.get_secret_value()
    account["hs_token"] = homeserver.account().hs_token.get_secret_value()
    bridge = write_config(tmp_path / "bridge.yaml", {
        "bcn": {"url": f"ws://127.0.0.1:{hub_port}", "token": LINK_TOKEN,
                "link_name": "bridge-a"},
        "store": f"sqlite:///{tmp_path / 'bridge.db'}",
        "web": {"enabled": False},
        "accounts": {"matrix": {"main": account}},
        "bindings": [{"channel": "matrix:main", "chat": room, "group": "demo"}],
    })
    return hub, bridge


@dataclass
class Running:
    room: str
    hub: HubProcess
    bridge: BridgeProcess
    bridge_config: Path


@contextlib.asynccontextmanager
async def running(tmp_path: Path, homeserver: Any, ada: Any,
                  make_bot: Callable[[int, Path], Bot]) -> AsyncIterator[Running]:
    """A room with the bridge user in it, a `bcn-bridge hub` and a `bcn-bridge run`
    process, and the bot; everything stopped (the bridge killed) on the way out."""
    room = await ada.create_room(invite=[BRIDGE_USER])
    hub_port = free_port()
    hub_config, bridge_config = configs(tmp_path, homeserver, room, hub_port)
    hub = HubProcess(hub_config)
    await hub.start()
    bot = make_bot(hub_port, tmp_path)
    bridge = BridgeProcess(bridge_config)
    try:
        await bot.start(timeout=WAIT)
        await bridge.start()
        await ada.wait_for(room, joined(BRIDGE_USER), timeout=WAIT)
        yield Running(room, hub, bridge, bridge_config)
    finally:
        await bot.stop()
        await bridge.kill()
        await hub.stop()


async def test_kill_9_mid_streamed_reply_is_completed_once_after_restart(
        tmp_path, homeserver, ada):
    async with running(tmp_path, homeserver, ada, slow_bot) as scene:
        room, bridge, bridge_config = scene.room, scene.bridge, scene.bridge_config
        await ada.say(room, "tell me slowly")
        await ada.wait_for(room, lambda events: bot_messages(events, SLOW), timeout=WAIT)
        await bridge.kill()
        partial = [text for _, text in bot_messages(await ada.events(room), SLOW)]
        assert partial and partial[0] != "".join(WORDS).strip()

        restarted = BridgeProcess(bridge_config)
        await restarted.start()
        try:
            final = "".join(WORDS).strip()
            await ada.wait_for(room, lambda events: [
                t for _, t in bot_messages(events, SLOW) if t == final], timeout=WAIT)
            await asyncio.sleep(1.0)  # room for a wrongly repeated post or a late edit
            shown = [text for _, text in bot_messages(await ada.events(room), SLOW)]
        finally:
            await restarted.stop()
    assert shown == [final], shown


async def test_a_transaction_unacked_when_the_bridge_is_killed_is_relayed_once(
        tmp_path, homeserver, ada):
    """The hub is frozen (SIGSTOP), so the bridge holds the person's transaction without
    acking it; it is killed then, the hub thawed and the bridge started again. Synapse sends
    the transaction again (the bridge's ping at start asks for it at once); the restarted
    bridge takes the dead process's claim on it over (a process of this host that no longer
    runs) and handles it. The message still reaches the bot once: its own claim, the spool
    and the hub's idempotency on its key let one relay through."""
    async with running(tmp_path, homeserver, ada, quick_bot) as scene:
        room, bridge, bridge_config = scene.room, scene.bridge, scene.bridge_config
        hub_pid = scene.hub._process.pid  # type: ignore[union-attr]
        frozen = False
        try:
            os.kill(hub_pid, signal.SIGSTOP)
            frozen = True
            await ada.say(room, "before the ack")
            await bridge.wait_for_line(f"sees room {room}", timeout=WAIT)
            await asyncio.sleep(0.5)
            await bridge.kill()
            os.kill(hub_pid, signal.SIGCONT)
            frozen = False

            restarted = BridgeProcess(bridge_config)
            await restarted.start()
            try:
                await ada.wait_for(room, lambda events: [
                    t for _, t in bot_messages(events, SLOW) if t == "got: before the ack"],
                    timeout=WAIT)
                # Synapse's resend of the unacked transaction, handled by the restarted bridge.
                await restarted.wait_for_line("taking over matrix:main:txn:", timeout=WAIT)
                await asyncio.sleep(1.5)  # room for a second relay of the message
                shown = [text for _, text in bot_messages(await ada.events(room), SLOW)]
            finally:
                await restarted.stop()
        finally:
            if frozen:
                os.kill(hub_pid, signal.SIGCONT)
    assert shown == ["got: before the ack"], shown
