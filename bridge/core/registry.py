"""Adapters by channel type.

Adding a platform touches its own folder and one line here. Adapters are imported
lazily so that the core never imports a platform library unless that platform is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

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
