"""Adapters by channel type.

Adding a platform is its own folder, `adapters/<type>/`, and one line in `ADAPTERS` below,
nothing else (docs/adding-a-platform.md):

- `adapter.py`: the `Adapter` subclass (`channel_type`, `capabilities`, `config_model`);
- `config.py`: the account config model, declared next to it;
- `__init__.py`: exports the adapter and its model lazily (`lazy_names`);
- optionally `cli.py` with `register(subparsers)`: the `bcn-bridge <type> ...` commands,
  found here by that name (`cli_modules`), and `doctor.py` for `Adapter.diagnose`.

Adapters are imported lazily so that the core never imports a platform library unless that
platform is used; a platform's `cli.py` must import it only inside its command handlers.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

    from bridge.core.adapter import Adapter

ADAPTERS: dict[str, str] = {
    "webchat": "adapters.webchat:WebchatAdapter",
    "telegram": "adapters.telegram:TelegramAdapter",
    "discord": "adapters.discord:DiscordAdapter",
    "slack": "adapters.slack:SlackAdapter",
    "matrix": "adapters.matrix:MatrixAdapter",
}


class UnknownChannelType(LookupError):
    pass


def adapter_class(channel_type: str) -> type[Adapter]:
    try:
        target = ADAPTERS[channel_type]
    except KeyError:
        known = ", ".join(sorted(ADAPTERS))
        raise UnknownChannelType(
            f"unknown channel type {channel_type!r}; known types: {known}"
        ) from None
    module_name, _, class_name = target.partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def account_config_model(channel_type: str) -> type[BaseModel]:
    """The account config schema an adapter declares next to its code."""
    return adapter_class(channel_type).config_model


def cli_modules() -> dict[str, ModuleType]:
    """Each platform's `adapters/<type>/cli.py`, by channel type, in `ADAPTERS` order: the
    command line adds their commands (`register(subparsers)`) after its own. A platform
    without one has no commands of its own."""
    found: dict[str, ModuleType] = {}
    for channel_type, target in ADAPTERS.items():
        name = f"{target.partition(':')[0]}.cli"
        try:
            found[channel_type] = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
    return found


def lazy_names(package: str, **modules: str) -> Callable[[str], Any]:
    """A platform package's module `__getattr__`: each name is taken from its submodule
    (`DiscordAdapter="adapter"`) on first use, so importing the package — as `cli_modules`
    does — loads no platform library."""

    def getattr_(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return getattr_
