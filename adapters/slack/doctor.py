"""`bcn-bridge doctor` for a Slack account: tokens accepted, scopes granted.

Calls what `start()` calls (auth.test, and apps.connections.open in Socket Mode) but opens
no WebSocket, so a running bridge keeps its connection.
"""

from __future__ import annotations

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.config import SlackAccountConfig
from adapters.slack.errors import CALL_ERRORS, SlackStartError, start_error
from adapters.slack.redaction import protect_tokens
from adapters.slack.startup import CUSTOMIZE_SCOPE, NEEDED_SCOPES, identify
from bridge.core.adapter import Diagnosis


async def diagnose(account: str, config: SlackAccountConfig) -> list[Diagnosis]:
    channel = f"slack:{account}"
    secrets = [s.get_secret_value() for s in (config.bot_token, config.app_token) if s]
    protect_tokens(*secrets)
    async with aiohttp.ClientSession() as session:
        client = AsyncWebClient(token=config.bot_token.get_secret_value(),
                                base_url=config.api_base_url, timeout=config.request_timeout,
                                session=session)
        try:
            identity = await identify(client, account)
        except SlackStartError as exc:
            return [Diagnosis.fail(str(exc), f"check accounts.slack.{account}.bot_token and "
                                   f"that {config.api_base_url} is reachable")]
        found = [Diagnosis.ok(f"{channel}: logged in as @{identity.name} in {identity.team} "
                              f"({identity.team_id})")]
        missing = [scope for scope in NEEDED_SCOPES if scope not in identity.scopes]
        if missing:
            needs = ", ".join(f"{scope} ({NEEDED_SCOPES[scope]})" for scope in missing)
            found.append(Diagnosis.fail(
                f"{channel}: missing scopes: {needs}",
                "add them under OAuth & Permissions → Bot Token Scopes and reinstall the app "
                "(or create it from `bcn-bridge slack manifest`)",
            ))
        else:
            found.append(Diagnosis.ok(f"{channel}: has the scopes it needs"))
        if not identity.can_customize:
            found.append(Diagnosis.warn(
                f"{channel}: no {CUSTOMIZE_SCOPE} scope: replies show under the app's name",
                f"add {CUSTOMIZE_SCOPE} and reinstall, so bots post under their own names",
            ))
        if config.mode == "socket" and config.app_token is not None:
            found.append(await _socket_check(session, config, account))
        elif config.mode == "http":
            found.append(Diagnosis.ok(
                f"{channel}: http mode; Slack must reach {config.events_path(account)} "
                "on the bridge's public URL"
            ))
        return found


async def _socket_check(
    session: aiohttp.ClientSession, config: SlackAccountConfig, account: str
) -> Diagnosis:
    """apps.connections.open accepts the app-level token (the URL it gives is not used)."""
    assert config.app_token is not None
    client = AsyncWebClient(token=config.app_token.get_secret_value(),
                            base_url=config.api_base_url, timeout=config.request_timeout,
                            session=session)
    failure: SlackStartError | None = None
    try:
        await client.apps_connections_open(app_token=config.app_token.get_secret_value())
    except CALL_ERRORS as exc:
        failure = start_error(exc, account, "apps.connections.open")
    if failure is not None:
        return Diagnosis.fail(str(failure), f"check accounts.slack.{account}.app_token "
                              "(an xapp- token with connections:write)")
    return Diagnosis.ok(f"slack:{account}: Socket Mode accepts the app token")
