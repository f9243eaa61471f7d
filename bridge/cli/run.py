"""`bcn-bridge run -c FILE`: the bridge (and the embedded hub when the file has `hub:`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from bridge import event_loop
from bridge.config import ConfigError

if TYPE_CHECKING:
    from bridge.app import BridgeApp

log = logging.getLogger("bcn-bridge")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("run", help="run the bridge from a YAML config file")
    parser.add_argument("-c", "--config", required=True, metavar="FILE", help="config file")
    parser.add_argument("--port", type=int, metavar="PORT",
                        help="listen on this port instead of web.listen's")
    add_log_options(parser)
    parser.set_defaults(handler=run_command)


def add_log_options(parser: argparse.ArgumentParser) -> None:
    """`--log-level` and `--log-format`; unset, they follow the config's `log:` section."""
    from bridge.logs import LOG_FORMATS

    parser.add_argument("--log-level", type=str.upper,
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                        help="default: the config's log.level, else INFO")
    parser.add_argument("--log-format", choices=LOG_FORMATS,
                        help="text (default) or json: one JSON object a line, for collectors")


def run_command(args: argparse.Namespace) -> int:
    from bridge.config.schema import load_config
    from bridge.logs import setup_logging

    setup_logging(args.log_level or "INFO", args.log_format or "text")
    try:
        config = load_config(args.config)
        config = with_port(config, args.port)
    except ConfigError as exc:
        report_config_error(exc)
        return 2
    setup_logging(args.log_level or config.log.level, args.log_format or config.log.format)
    register_secrets(config)
    return event_loop.run(serve(config))


def with_port(config: Any, port: int | None) -> Any:
    """The config with `--port` applied to `web.listen` (the host stays)."""
    if port is None:
        return config
    if not 0 <= port <= 65535:
        raise ConfigError.single("--port", f"expected a port from 0 to 65535, got {port}")
    host = config.web.listen.strip().rpartition(":")[0]
    return config.model_copy(
        update={"web": config.web.model_copy(update={"listen": f"{host}:{port}"})}
    )


def report_config_error(exc: ConfigError) -> None:
    """Every problem of the file on stderr, as text or as one JSON object each."""
    from bridge.logs import announce

    announce(str(exc), stream=sys.stderr, level=logging.ERROR)


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
        event_loop.settle()
        await stop.wait()
        log.info("shutting down")
    except (OSError, AdapterStartError) as exc:
        log.error("could not start: %s", start_failure(exc, config))
        return 1
    finally:
        for companion in reversed(running):
            await companion.stop()
        await app.stop()
    return 0


def start_failure(exc: BaseException, config: Any) -> str:
    """What failed, in one line with the fix; a busy port names the setting to change."""
    if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
        from bridge.listen import parse_listen

        taken = str(exc)
        if config.web.enabled and f", {parse_listen(config.web.listen)[1]})" in taken:
            return (f"web.listen {config.web.listen} is already in use (is another bcn-bridge "
                    "running?); pass --port PORT, or change web.listen")
        if config.hub is not None and f", {config.hub.port})" in taken:
            return (f"hub.listen {config.hub.listen} is already in use (is another hub "
                    "running?); change hub.listen, or use port 0 for any free one")
    return str(exc)
