"""Where discord.py sends its traffic: `api_base_url` for REST and webhooks, `gateway_url`
for the gateway. This is the only module that touches discord.py's globals.

discord.py has no per-client setting for either address. It reads two class attributes:

- `discord.http.Route.BASE`: the REST root (including `/v10`) that every `Route` — bot
  requests, webhook executions and interaction callbacks alike — is built on;
- `discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY`: where a plain `Client` connects (an
  `AutoShardedClient` with `shard_count` set connects there too).

Resumes are the third piece: READY carries a `resume_gateway_url`, and discord.py resumes
there after a drop. Against Discord that is right. Against a proxy or the test fake it would
leave the configured gateway behind, so when `gateway_url` is not Discord's own, every
(re)connection is pinned to it by wrapping `DiscordWebSocket.from_client`, the one function
all connects and resumes go through (a resume keeps its session id and sequence).

The JSON reader is the fourth: discord.py reads every gateway frame and REST answer with
`discord.utils._from_json`, orjson's `loads` when it is installed, which refuses an escaped
lone surrogate (`"\\ud800"`, valid JSON) — one such message ended the gateway until the bridge
restarted. While a claim is held it is `bridge.fastjson.loads`, the JSON door of
docs/text.md ("Valid Unicode"): orjson still reads valid text, a lone surrogate reads as
U+FFFD.

The attributes are process-global, so every Discord account of one process must use the same
two addresses; `claim` refuses a second, different pair with a clear message. The last
`release` puts discord.py back as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import discord.utils
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

from adapters.discord.config import DISCORD_GATEWAY
from bridge import fastjson

_DISCORD_DEFAULTS = (Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY)
_FROM_CLIENT = DiscordWebSocket.__dict__["from_client"]
"""The library's own classmethod object, kept to wrap and to restore."""
_FROM_JSON = discord.utils._from_json
"""The library's own JSON reader, kept to restore."""


class EndpointConflict(RuntimeError):
    """Two Discord accounts in one process want different REST or gateway addresses."""


@dataclass
class _Claim:
    api_base_url: str
    gateway_url: str
    holders: int = 0


_claim: _Claim | None = None


def gateway_address(gateway_url: str) -> yarl.URL:
    """The URL discord.py appends `?v=10&encoding=json…` to; it needs a path, even `/`."""
    url = yarl.URL(gateway_url)
    return url if url.path not in ("", "/") else url.with_path("/")


async def _pinned_from_client(cls: type[DiscordWebSocket], client: Any, **kwargs: Any) -> Any:
    """Connect (or resume) at the configured gateway, never at READY's resume URL."""
    if kwargs.get("gateway") is not None:
        kwargs["gateway"] = cls.DEFAULT_GATEWAY
    return await _FROM_CLIENT.__func__(cls, client, **kwargs)


def claim(api_base_url: str, gateway_url: str) -> None:
    """Point discord.py at these addresses for as long as this account runs."""
    global _claim
    if _claim is not None and (_claim.api_base_url, _claim.gateway_url) != (
        api_base_url, gateway_url
    ):
        raise EndpointConflict(
            "every Discord account of one bridge process must use the same api_base_url and "
            f"gateway_url (discord.py keeps them process-wide): {_claim.api_base_url} / "
            f"{_claim.gateway_url} is in use, {api_base_url} / {gateway_url} was asked for"
        )
    if _claim is None:
        Route.BASE = api_base_url
        DiscordWebSocket.DEFAULT_GATEWAY = gateway_address(gateway_url)
        discord.utils._from_json = fastjson.loads
        if gateway_url != DISCORD_GATEWAY:
            DiscordWebSocket.from_client = classmethod(_pinned_from_client)  # type: ignore[assignment,method-assign]
        _claim = _Claim(api_base_url, gateway_url)
    _claim.holders += 1


def release() -> None:
    """This account stopped; the last one to stop restores discord.py's defaults."""
    global _claim
    if _claim is None:
        return
    _claim.holders -= 1
    if _claim.holders > 0:
        return
    _claim = None
    Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = _DISCORD_DEFAULTS
    DiscordWebSocket.from_client = _FROM_CLIENT  # type: ignore[method-assign]
    discord.utils._from_json = _FROM_JSON
