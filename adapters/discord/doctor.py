"""`bcn-bridge doctor` for a Discord account: token, intents switched on, channels reachable.

Asks Discord's REST API what `start()` relies on, without opening a gateway (so it is safe
beside a running bridge): who the bot is, whether the application has the Message Content
intent (and Server Members when configured) enabled in the developer portal — a 4014 at
start otherwise — and whether every bound channel can be seen by the bot.
"""

from __future__ import annotations

import aiohttp

from adapters.discord.config import DiscordAccountConfig
from adapters.discord.errors import DEVELOPER_PORTAL
from adapters.discord.redaction import protect_tokens
from bridge.core.adapter import Diagnosis
from bridge.core.binding import Binding

# Application flags (developer portal switches), as /oauth2/applications/@me reports them.
MESSAGE_CONTENT = (1 << 18) | (1 << 19)
"""GATEWAY_MESSAGE_CONTENT_LIMITED | GATEWAY_MESSAGE_CONTENT: either means it is on."""
SERVER_MEMBERS = (1 << 14) | (1 << 15)


async def diagnose(
    account: str, config: DiscordAccountConfig, bindings: list[Binding]
) -> list[Diagnosis]:
    channel = f"discord:{account}"
    token = config.token.get_secret_value()
    protect_tokens(token)
    headers = {"Authorization": f"Bot {token}", "User-Agent": "bcn-bridge doctor"}
    timeout = aiohttp.ClientTimeout(total=config.webhook_timeout)
    base = config.api_base_url.rstrip("/")
    async with aiohttp.ClientSession(headers=headers, timeout=timeout) as http:
        try:
            async with http.get(f"{base}/users/@me") as answer:
                if answer.status == 401:
                    return [Diagnosis.fail(
                        f"{channel}: Discord rejected the bot token",
                        f"check accounts.discord.{account}.token (developer portal → Bot → "
                        "Reset Token gives a new one)",
                    )]
                answer.raise_for_status()
                me = await answer.json(content_type=None)
            async with http.get(f"{base}/oauth2/applications/@me") as answer:
                answer.raise_for_status()
                application = await answer.json(content_type=None)
            found = [Diagnosis.ok(f"{channel}: logged in as {me.get('username')} "
                                  f"(id {me.get('id')})")]
            found += _intents(channel, config, int(application.get("flags") or 0))
            for binding in bindings:
                found.append(await _channel(http, base, channel, binding.chat))
            return found
        except (aiohttp.ClientError, TimeoutError) as exc:
            return [Diagnosis.fail(
                f"{channel}: cannot reach Discord at {base} ({type(exc).__name__}: {exc})",
                f"check the network, or accounts.discord.{account}.api_base_url",
            )]


def _intents(channel: str, config: DiscordAccountConfig, flags: int) -> list[Diagnosis]:
    wanted = [("Message Content Intent", MESSAGE_CONTENT)]
    if config.members_intent:
        wanted.append(("Server Members Intent", SERVER_MEMBERS))
    found = []
    for name, bits in wanted:
        if flags & bits:
            found.append(Diagnosis.ok(f"{channel}: {name} is on"))
        else:
            found.append(Diagnosis.fail(
                f"{channel}: {name} is off, so Discord would close the gateway (4014)",
                f"turn on {name} under Bot → Privileged Gateway Intents ({DEVELOPER_PORTAL})",
            ))
    return found


async def _channel(http: aiohttp.ClientSession, base: str, channel: str, chat: str) -> Diagnosis:
    async with http.get(f"{base}/channels/{chat}") as answer:
        if answer.status == 200:
            data = await answer.json(content_type=None)
            return Diagnosis.ok(f"{channel}: sees channel {chat} (#{data.get('name', '?')})")
        if answer.status in (403, 404):
            return Diagnosis.fail(
                f"{channel}: cannot see channel {chat} (HTTP {answer.status})",
                "invite the bot to that server (bcn-bridge discord invite-url -c FILE) and let "
                "it view the channel, or fix the binding's chat id",
            )
        return Diagnosis.warn(f"{channel}: channel {chat} answered HTTP {answer.status}")
