"""The one-command demo: embedded hub + bridge + webchat + the `echo` and `rules` bots.

Needs no accounts and no files of the user's: the deployment is `bridge/demo.yaml` (shipped
inside the package), with state in a temporary directory unless `--data-dir` says otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bridge.config.schema import BridgeConfig, load_config

DEMO_ROOM = "lobby"
DEMO_CONFIG = Path(__file__).with_name("demo.yaml")
"""The demo deployment (also shipped as config/demo.yaml)."""


def demo_config(data_dir: Path, *, web_port: int = 8080, hub_port: int = 0) -> BridgeConfig:
    """The demo file, with its ports and state moved to where this run wants them: the same
    file names as demo.yaml gives (`demo.db`, `hub/`), in `data_dir` instead of `./data`."""
    config = load_config(DEMO_CONFIG, environ={})
    assert config.hub is not None
    store_file = Path(config.store.removeprefix("sqlite:///")).name
    return config.model_copy(update={
        "hub": config.hub.model_copy(
            update={"listen": f"127.0.0.1:{hub_port}",
                    "data_dir": data_dir / Path(config.hub.data_dir).name}
        ),
        "store": f"sqlite:///{data_dir / store_file}",
        "web": config.web.model_copy(update={"listen": f"127.0.0.1:{web_port}"}),
    })


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
