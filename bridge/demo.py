"""The one-command demo: embedded hub + bridge + webchat + the `echo` and `rules` bots.

Needs no accounts and no files of the user's: the deployment is `bridge/demo.yaml` (shipped
inside the package), with state in a temporary directory unless `--data-dir` says otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bridge.config.schema import BridgeConfig, load_config

DEMO_ROOM = "lobby"
DEMO_CONFIG = Path(__file__).with_name("demo.yaml")
"""The demo deployment (also shipped as config/demo.yaml)."""


def in_container(root: Path = Path("/"), environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process runs in a container: `$container` (set by podman and
    systemd-nspawn, and by deploy/Dockerfile), Docker's `/.dockerenv` or podman's
    `/run/.containerenv`."""
    env = os.environ if environ is None else environ
    return bool(env.get("container")) or (root / ".dockerenv").exists() \
        or (root / "run" / ".containerenv").exists()


def demo_web_host(root: Path = Path("/"), environ: Mapping[str, str] | None = None) -> str:
    """Where the demo's webchat listens: every interface inside a container, so that
    `docker run -p 8080:8080` reaches it; only this machine's loopback anywhere else."""
    return "0.0.0.0" if in_container(root, environ) else "127.0.0.1"


def demo_config(data_dir: Path, *, web_port: int = 8080, hub_port: int = 0,
                web_host: str = "127.0.0.1") -> BridgeConfig:
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
        "web": config.web.model_copy(update={"listen": f"{web_host}:{web_port}"}),
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
