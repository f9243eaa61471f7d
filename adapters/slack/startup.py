"""Who the app is in its workspace, asked once when a Slack account starts.

`auth.test` gives the app's bot user id and bot id, which is how the adapter recognises its
own messages (including the edit and delete events Bolt's self-filter misses), and its
granted scopes in the `x-oauth-scopes` response header. A missing `chat:write.customize` is
the usual reason bots do not appear under their own names, so it is said once, with the fix.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.errors import CALL_ERRORS, start_error

log = logging.getLogger(__name__)

CUSTOMIZE_SCOPE = "chat:write.customize"

NEEDED_SCOPES = {
    "chat:write": "post replies",
    "channels:history": "see messages in public channels",
    "users:read": "show people's names",
    "commands": "receive slash commands",
}
"""Scopes without which part of the bridge silently does nothing, and what they are for."""


@dataclass(frozen=True, slots=True)
class Identity:
    """The app's bot user in one workspace, as `auth.test` describes it."""

    user_id: str
    bot_id: str
    team_id: str
    team: str
    name: str
    scopes: frozenset[str]

    @property
    def can_customize(self) -> bool:
        """May post under another name and icon (`username`, `icon_url`)."""
        return CUSTOMIZE_SCOPE in self.scopes

    def wrote(self, message: Mapping[str, Any]) -> bool:
        """Did this app post the message (by its bot id, or as its bot user)?"""
        return (
            bool(message.get("bot_id")) and message.get("bot_id") == self.bot_id
        ) or (bool(message.get("user")) and message.get("user") == self.user_id)


async def identify(client: AsyncWebClient, account: str) -> Identity:
    """`auth.test`; a `SlackStartError` that names the key to check when it fails."""
    failure = None
    try:
        response = await client.auth_test()
    except CALL_ERRORS as exc:
        failure = start_error(exc, account, "auth.test")
    if failure is not None:
        # Raised outside the `except`, so no traceback chains a response that names a token.
        raise failure
    data = response.data if isinstance(response.data, dict) else {}
    return Identity(
        user_id=str(data.get("user_id") or ""),
        bot_id=str(data.get("bot_id") or ""),
        team_id=str(data.get("team_id") or ""),
        team=str(data.get("team") or ""),
        name=str(data.get("user") or ""),
        scopes=scopes_of(response.headers),
    )


def scopes_of(headers: Mapping[str, Any] | None) -> frozenset[str]:
    """The granted scopes from the `x-oauth-scopes` header (any spelling of its name)."""
    for key, value in (headers or {}).items():
        if str(key).lower() == "x-oauth-scopes":
            return frozenset(scope.strip() for scope in str(value).split(",") if scope.strip())
    return frozenset()


def scope_warnings(identity: Identity, account: str) -> list[str]:
    """What the log should say about scopes the app lacks; empty when it has them all."""
    warnings = []
    if not identity.can_customize:
        warnings.append(
            f"slack:{account} lacks the {CUSTOMIZE_SCOPE} scope: bots' replies are posted by "
            "the app under a bold name line instead of under each bot's own name and icon. "
            "Fix: add the scope (OAuth & Permissions → Bot Token Scopes) and reinstall the app."
        )
    missing = [scope for scope in NEEDED_SCOPES if scope not in identity.scopes]
    if missing and identity.scopes:
        needs = "; ".join(f"{scope} to {NEEDED_SCOPES[scope]}" for scope in missing)
        warnings.append(
            f"slack:{account} is missing scopes it needs: {needs}. Fix: create the app from "
            "`bcn-bridge slack manifest`, or add them and reinstall the app."
        )
    return warnings
