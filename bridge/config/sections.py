"""The bridge's own top-level sections: `bcn`, `store`, `web`, `log`, `commands`.

The `hub`, `accounts.*` and `bindings` sections are declared where they are used
(`bridge.hub.config`, each adapter, `bridge.core.binding`); only what belongs to the
bridge process as a whole lives here.
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bridge.dashboard.config import DashboardSection

EMBEDDED = "embedded"
"""`bcn.url` value meaning: run the `hub:` section in this process and link to it."""

DEFAULT_STORE = "sqlite:///./data/bridge.db"

_SECRET_SCHEMA = {"format": "password", "writeOnly": True}
"""Marks a field as a secret for editors and for the loader's error messages."""


class BcnSection(BaseModel):
    """Where the BCN is and how the bridge introduces itself on the channel link."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(
        EMBEDDED,
        description='"embedded" for the in-process hub, or the BCN\'s ws:// or wss:// address.',
    )
    token: str | None = Field(
        None,
        repr=False,
        json_schema_extra=_SECRET_SCHEMA,
        description="The channel-link credential; required for a remote BCN.",
    )
    link_name: str = Field(
        "bcn-bridge",
        min_length=1,
        max_length=64,
        description="A new link with the same name replaces the old one (reconnects).",
    )
    heartbeat_interval: float = Field(30.0, gt=0, description="Seconds between channel.status.")
    request_timeout: float = Field(15.0, gt=0, description="Seconds to wait for the BCN's answer.")
    connect_timeout: float = Field(10.0, gt=0)
    wait_for_link: float = Field(
        120.0, ge=0, description="How long a request waits for a dropped link to come back."
    )
    spool_limit: int = Field(
        10_000, ge=1,
        description="Human messages kept (on disk) while the BCN is unreachable; past it, new "
        "ones are refused with a notice in their chat.",
    )

    @field_validator("url")
    @classmethod
    def _url_shape(cls, value: str) -> str:
        if value == EMBEDDED:
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("ws", "wss"):
            raise ValueError(f'expected "{EMBEDDED}" or a ws:// or wss:// URL')
        if not parts.hostname:
            raise ValueError("the BCN URL has no host")
        return value

    @property
    def embedded(self) -> bool:
        return self.url == EMBEDDED


class WebSection(BaseModel):
    """The one HTTP port the bridge opens (webchat, webhooks, health checks)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    listen: str = Field("127.0.0.1:8080", description='HOST:PORT; ":PORT" for all interfaces.')
    max_request_bytes: int = Field(1024 * 1024, ge=1024, description="Largest request body.")
    dashboard: DashboardSection = Field(
        default_factory=DashboardSection,
        description="The operator's dashboard at /dashboard (off unless enabled).",
    )

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        from bridge.listen import parse_listen

        parse_listen(value)
        return value


class LogSection(BaseModel):
    """How the process logs: `text` for a terminal, `json` (one object a line) for a log
    collector. `--log-format` and `--log-level` on the command line win over these."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["text", "json"] = Field("text", description="text or json.")
    level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="debug, info, warning or error."
    )

    @field_validator("level", mode="before")
    @classmethod
    def _any_case(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value


class RelaySection(BaseModel):
    """Bounds on what one bot output may cost the bridge."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_reply_chars: int = Field(
        100_000, ge=1000,
        description="Longest bot reply shown; a longer one is cut there and says so (one "
        "runaway reply must not cost every chat its turn).",
    )


_COMMAND_NAME = re.compile(r"^[a-z0-9_]{1,32}$")
CommandName = str | Literal[False]


class CommandNames(BaseModel):
    """Chat command names (without the slash); `false` turns a command off.

    Lowercase letters, digits and `_`, at most 32: the rule Telegram and Discord both
    enforce for native commands, so one name works on every platform.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    ask: CommandName = Field("ask", description="/ask <Bot> <task>: start a tracked request.")
    requests: CommandName = Field("requests", description="List open requests in this chat.")
    stop: CommandName = Field("stop", description="Abort the running bot reply.")
    new: CommandName = Field("new", description="Start a fresh BCN session for this chat.")

    @field_validator("ask", "requests", "stop", "new")
    @classmethod
    def _name_shape(cls, value: CommandName) -> CommandName:
        if value is False:
            return value
        name = value.removeprefix("/")
        if not _COMMAND_NAME.match(name):
            raise ValueError("a command name is 1-32 lowercase letters, digits or '_'")
        return name

    @model_validator(mode="after")
    def _distinct(self) -> CommandNames:
        seen: dict[str, str] = {}
        for command, name in self.enabled().items():
            if name in seen:
                raise ValueError(f"'{seen[name]}' and '{command}' both use the name '{name}'")
            seen[name] = command
        return self

    def enabled(self) -> dict[str, str]:
        """Command -> chat name, for the commands that are switched on."""
        names = {"ask": self.ask, "requests": self.requests, "stop": self.stop, "new": self.new}
        return {command: name for command, name in names.items() if name is not False}


def check_store_url(url: str) -> str:
    """Validate with the store layer's own parser, whose messages mask any password.

    Only the URL is checked (scheme, path, Redis host, port, database and options); whether
    the server answers is found out when the bridge opens the store.
    """
    from bridge.store.opening import parse_store_url

    parse_store_url(url)
    return url
