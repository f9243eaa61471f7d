"""`bot.connect`: who the bot is, which version it speaks, and the answer it gets.

As the BCN server does it:
- `protocol_version` omitted → 2 (the compatibility default; v3 must be asked for);
  outside `min_protocol_version`..3 → `unsupported_protocol_version`;
- `token` → that bot (unknown → `unauthorized`); with a `bot_id` too, they must agree;
- no token: a `bot_id` of a known bot is `bot_id_conflict` (reconnect with its token),
  a new `bot_id` is registered under that id; neither → a new bot with a fresh uuid;
  `name` names a new bot;
- `client_kind` is recorded; no MCP coordination profile is enabled on this hub, so
  `tool_result_task_intent` is false for everyone (the server's default);
- the answer: `is_new`, `token`, `bot_uuid`, `name`, `protocol_version`,
  `min_supported_version`, `capabilities`, `env`, and `deprecation` when configured.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from bridge.bcn.connection import Connection
from bridge.bcn.errors import BcnError, ErrorCode
from bridge.bcn.versions import (
    CURRENT_PROTOCOL_VERSION,
    DEFAULT_PROTOCOL_VERSION,
    capabilities,
    speaks_run_events,
)
from bridge.hub.admission import RegistrationRefused
from bridge.hub.groups import Group
from bridge.hub.handshake import requested_version
from bridge.hub.registry import BotIdTaken, BotRecord, NameTaken
from bridge.hub.state import BotLink, HubState

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Connected:
    bot: BotLink
    payload: dict[str, Any]
    joined: list[Group]
    """Groups the bot joined by registering now (their links hear about it)."""


def _optional_text(params: dict[str, Any], key: str) -> str | None:
    value = params.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BcnError(ErrorCode.INVALID_REQUEST, f"{key} must be a string")
    return value


def connect_bot(
    state: HubState, conn: Connection, params: dict[str, Any], address: str | None = None
) -> Connected:
    """Identify (or register) the bot a `bot.connect` speaks for; raises `BcnError`.

    `address` is the peer's IP: registrations are rate-limited per address.
    """
    config = state.config
    version = requested_version(
        params, default=DEFAULT_PROTOCOL_VERSION, lowest=config.min_protocol_version,
        newest=CURRENT_PROTOCOL_VERSION,
    )
    token = _optional_text(params, "token")
    bot_id = _optional_text(params, "bot_id")
    client_kind = _optional_text(params, "client_kind")
    joined: list[Group] = []
    if token is not None:
        record = state.registry.by_token(token)
        if record is None:
            raise BcnError(ErrorCode.UNAUTHORIZED, "unknown token")
        if bot_id is not None and bot_id != record.bot_uuid:
            raise BcnError(ErrorCode.UNAUTHORIZED, "the token does not belong to that bot_id")
        is_new = False
    else:
        record, token = _register(state, _optional_text(params, "name"), bot_id, address)
        joined = state.groups.admit(record)
        is_new = True
    negotiated = capabilities(version)
    bot = BotLink(record, conn, version, asyncio.get_running_loop().time(),
                  run_events=speaks_run_events(version, negotiated),
                  client_kind=client_kind.strip() if client_kind else None)
    payload: dict[str, Any] = {
        "is_new": is_new,
        "token": token,
        "bot_uuid": record.bot_uuid,
        "name": record.name,
        "protocol_version": version,
        "min_supported_version": config.min_protocol_version,
        "capabilities": negotiated,
        "env": {"BCN_BOT_UUID": record.bot_uuid, "BCN_BOT_TOKEN": token},
    }
    notice = config.deprecations.get(version)
    if notice is not None:
        payload["deprecation"] = notice.model_dump()
    return Connected(bot, payload, joined)


def _register(
    state: HubState, name: str | None, bot_id: str | None, address: str | None
) -> tuple[BotRecord, str]:
    try:
        state.admission.check_tokenless(name)
        state.admission.check(state, address, name)
    except RegistrationRefused as refused:
        if refused.retry_after is None:  # a full group: asking again will not help
            raise BcnError(ErrorCode.INVALID_REQUEST, refused.message) from None
        raise BcnError(ErrorCode.RATE_LIMITED, refused.message, retryable=True,
                       retry_after_ms=refused.retry_after * 1000) from None
    try:
        record, token = state.registry.register(name, bot_id)
    except BotIdTaken as exc:
        raise BcnError(ErrorCode.BOT_ID_CONFLICT, str(exc)) from None
    except (NameTaken, ValueError) as exc:
        raise BcnError(ErrorCode.INVALID_REQUEST, str(exc)) from None
    log.info("bot registered: %s (%s)", record.name, record.bot_uuid)
    return record, token
