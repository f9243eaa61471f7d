"""The one-command demo: embedded hub + bridge + webchat + the `echo` and `rules` bots.

Needs no accounts and no files: the config is built here, state goes to a temporary
directory unless `--data-dir` says otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bridge.config.schema import BridgeConfig

DEMO_GROUP = "demo"
DEMO_ROOM = "lobby"


def demo_config(data_dir: Path, *, web_port: int = 8080, hub_port: int = 0) -> BridgeConfig:
    return BridgeConfig.model_validate(
        {
            "hub": {
                "listen": f"127.0.0.1:{hub_port}",
                "data_dir": str(data_dir / "hub"),
                # A bot's reply that names nobody is for the humans: the other bots observe it
                # instead of the driver answering it (which would make Echo echo Rules).
                "bot_reply_default": "observe",
                "groups": [
                    {"id": DEMO_GROUP, "name": "Demo", "driver": "Echo",
                     "bots": ["Echo", "Rules"], "auto_join": True},
                ],
            },
            "bcn": {"url": "embedded"},
            "store": f"sqlite:///{data_dir / 'bridge.db'}",
            "web": {"listen": f"127.0.0.1:{web_port}"},
            "bindings": [
                {"channel": "webchat:main", "chat": room, "group": DEMO_GROUP,
                 "protocol": {"enabled": True, "deliver": "raw"}}
                for room in (DEMO_ROOM, "team")
            ],
        }
    ).model_copy(update={"accounts": {"webchat": {"main": _webchat_account()}}})


def _webchat_account() -> Any:
    from bridge.core.registry import account_config_model

    return account_config_model("webchat").model_validate({})


async def start_demo_bots(hub_url: str, data_dir: Path, *, stream: bool = True) -> list[Any]:
    """The two example bots, connected to the hub and registered under their names."""
    from bridge.bcn.examples.echo import build_echo_bot
    from bridge.bcn.examples.rules_bot import build_rules_bot

    bot_url = f"{hub_url.rstrip('/')}/ws/bot"
    echo = build_echo_bot(bot_url, name="Echo", stream=stream, word_delay=0.05 if stream else 0,
                          token_file=data_dir / "echo.token")
    rules = build_rules_bot(bot_url, name="Rules", token_file=data_dir / "rules.token")
    for bot in (echo, rules):
        await bot.start(timeout=10)
    return [echo, rules]
