"""discord.py errors → the core's send errors, and start failures → one clear sentence.

The outbox retries a `TransientSendError` in order after `retry_after`; a
`PermanentSendError` is logged and skipped. Start failures become `DiscordStartError`s
whose message names the fix (the token setting, the developer-portal switch) and never
the token: `bcn-bridge run` prints them as one line.
"""

from __future__ import annotations

import asyncio

import aiohttp
from discord import (
    ConnectionClosed,
    DiscordServerError,
    Forbidden,
    HTTPException,
    LoginFailure,
    NotFound,
    PrivilegedIntentsRequired,
    RateLimited,
)

from adapters.discord.redaction import redact
from bridge.core.adapter import AdapterStartError, PermanentSendError, SendError, TransientSendError

UNKNOWN_WEBHOOK = 10015
"""The webhook was deleted (by a person, or by Discord with its channel): make a new one."""
UNKNOWN_MESSAGE = 10008
UNKNOWN_INTERACTION = 10062
INVALID_WEBHOOK_TOKEN = 50027
"""An interaction token older than 15 minutes: answer in the channel instead."""
MAX_WEBHOOKS = 30007
"""A channel already has its 15 webhooks."""

DEVELOPER_PORTAL = "https://discord.com/developers/applications"


def is_unknown_webhook(exc: BaseException) -> bool:
    return isinstance(exc, NotFound) and exc.code == UNKNOWN_WEBHOOK


def is_gone(exc: BaseException) -> bool:
    """The message (or the webhook that posted it) no longer exists."""
    return isinstance(exc, NotFound) and exc.code in (UNKNOWN_MESSAGE, UNKNOWN_WEBHOOK)


def is_expired_interaction(exc: BaseException) -> bool:
    """Discord no longer accepts answers through this interaction's token."""
    return isinstance(exc, HTTPException) and exc.code in (
        INVALID_WEBHOOK_TOKEN, UNKNOWN_INTERACTION, UNKNOWN_WEBHOOK
    )


def _retry_after(exc: HTTPException) -> float | None:
    """A 429 discord.py did not handle itself (no `Via` header): Discord still says when."""
    header = exc.response.headers.get("Retry-After") if exc.response is not None else None
    try:
        return float(header) if header is not None else None
    except ValueError:
        return None


def send_error(exc: BaseException, action: str) -> SendError:
    """The core's view of a failed call; the message never carries a token."""
    detail = redact(f"{action}: {type(exc).__name__}: {exc}")
    if isinstance(exc, RateLimited):
        return TransientSendError(detail, retry_after=exc.retry_after)
    if isinstance(exc, DiscordServerError):
        return TransientSendError(detail)
    if isinstance(exc, HTTPException) and exc.status == 429:
        return TransientSendError(detail, retry_after=_retry_after(exc))
    if isinstance(exc, Forbidden):
        return PermanentSendError(f"{detail} (the bot lacks a permission in this channel)")
    if isinstance(exc, HTTPException):
        return PermanentSendError(detail)
    if isinstance(exc, aiohttp.ClientError | OSError | asyncio.TimeoutError):
        return TransientSendError(detail)
    return PermanentSendError(detail)


class DiscordStartError(AdapterStartError):
    """The account could not start; the message is safe to log and says what to fix."""


def intents_switches(members: bool) -> str:
    switches = "Message Content Intent"
    return f"{switches} and Server Members Intent" if members else switches


def start_error(
    exc: BaseException, account: str, *, members: bool, where: str
) -> DiscordStartError:
    """Turn what discord.py raised while connecting into the sentence a person can act on."""
    channel = f"discord:{account}"
    if isinstance(exc, PrivilegedIntentsRequired) or (
        isinstance(exc, ConnectionClosed) and exc.code == 4014
    ):
        return DiscordStartError(
            f"{channel}: Discord refused a privileged intent (gateway close 4014). Turn on "
            f"{intents_switches(members)} under Bot → Privileged Gateway Intents in the "
            f"developer portal ({DEVELOPER_PORTAL}), then restart"
        )
    if isinstance(exc, LoginFailure) or (
        isinstance(exc, ConnectionClosed) and exc.code == 4004
    ):
        return DiscordStartError(
            f"{channel}: Discord rejected the bot token (check accounts.discord.{account}.token;"
            " resetting the token in the developer portal invalidates the old one)"
        )
    if isinstance(exc, ConnectionClosed) and exc.code == 4011:
        return DiscordStartError(
            f"{channel}: the bot is in too many servers for one gateway connection; set "
            f"accounts.discord.{account}.shard_count"
        )
    if isinstance(exc, ConnectionClosed) and exc.code in (4010, 4012, 4013):
        return DiscordStartError(
            f"{channel}: the gateway refused the connection settings (close {exc.code}); "
            f"check shard_ids and shard_count"
        )
    if isinstance(exc, TimeoutError):
        return DiscordStartError(f"{channel}: {exc}")
    return DiscordStartError(
        f"{channel} could not connect to {where}: {redact(f'{type(exc).__name__}: {exc}')}"
    )
