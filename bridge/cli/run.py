"""`bcn-bridge run -c FILE`: the bridge (and the embedded hub when the file has `hub:`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from bridge.config import ConfigError

if TYPE_CHECKING:
    from bridge.app import BridgeApp

log = logging.getLogger("bcn-bridge")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("run", help="run the bridge from a YAML config file")
    parser.add_argument("-c", "--config", required=True, metavar="FILE", help="config file")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from bridge.config.schema import load_config
    from bridge.logs import setup_logging

    setup_logging(args.log_level)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    register_secrets(config)
    return asyncio.run(serve(config))


def register_secrets(config: Any) -> None:
    """Tell the log redactor every secret the config holds."""
    from bridge.logs import REDACTOR

    REDACTOR.add(secrets_in(config))


def secrets_in(value: Any, secret_key: bool = False) -> list[str]:
    """Every SecretStr, and every string under a key that names a token or secret."""
    if hasattr(value, "get_secret_value"):
        return [value.get_secret_value()]
    if isinstance(value, str):
        return [value] if secret_key else []
    if hasattr(type(value), "model_fields"):
        items = [(name, getattr(value, name)) for name in type(value).model_fields]
    elif isinstance(value, dict):
        items = [(str(key), item) for key, item in value.items()]
    elif isinstance(value, list | tuple):
        return [found for item in value for found in secrets_in(item, secret_key)]
    else:
        return []
    return [
        found
        for name, item in items
        for found in secrets_in(item, secret_key or "token" in name or "secret" in name)
    ]


Companions = Callable[["BridgeApp"], Awaitable[list[Any]]]
"""Starts things that run beside the bridge (the demo's bots); returns them for `stop()`."""


async def serve(
    config: Any,
    *,
    companions: Companions | None = None,
    on_ready: Callable[[BridgeApp], None] | None = None,
) -> int:
    """Start the app (and its companions), wait for SIGINT/SIGTERM, stop cleanly."""
    from bridge.app import BridgeApp
    from bridge.core.adapter import AdapterStartError

    app = BridgeApp(config)
    running: list[Any] = []
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await app.start()
        if companions is not None:
            running = await companions(app)
        if on_ready is not None:
            on_ready(app)
        await stop.wait()
        log.info("shutting down")
    except (OSError, AdapterStartError) as exc:
        log.error("could not start: %s", exc)
        return 1
    finally:
        for companion in reversed(running):
            await companion.stop()
        await app.stop()
    return 0
