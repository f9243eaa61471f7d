"""slack_sdk errors → the core's send errors, and start failures worth one clear line.

The outbox retries a `TransientSendError` in order after `retry_after`; a
`PermanentSendError` is logged and skipped. Slack answers most refusals with HTTP 200 and
`{"ok": false, "error": "<code>"}`, so the code decides: rate limits, Slack-side failures and
network trouble are worth waiting for, everything else (channel gone, app not invited, a
scope missing) will fail the same way next time and says how to fix it.
"""

from __future__ import annotations

from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError, SlackRequestError

from bridge.core.adapter import (
    AdapterStartError,
    PermanentSendError,
    SendError,
    TransientSendError,
)
from bridge.logs import redact

TRANSIENT_CODES = frozenset(
    {
        "ratelimited",
        "internal_error",
        "fatal_error",
        "service_unavailable",
        "request_timeout",
        "team_added_to_org",
    }
)
"""Error codes Slack documents as "try again later"."""

CALL_ERRORS = (SlackClientError, aiohttp.ClientError, TimeoutError, OSError)
"""What a Web API call raises when it fails (as opposed to a bug in the caller)."""

GONE_CODES = frozenset({"message_not_found"})
"""A message that no longer exists (someone deleted it): deleting it again is a success."""

HINTS = {
    "not_in_channel": "invite the app to the channel: /invite @<app name>",
    "channel_not_found": "check the binding's chat id, and invite the app to the channel",
    "is_archived": "the channel is archived",
    "missing_scope": "add the scope to the app (see `bcn-bridge slack manifest`) and "
    "reinstall it",
    "invalid_auth": "check accounts.slack.<account>.bot_token",
    "token_revoked": "the app was uninstalled or its token revoked; reinstall it",
    "account_inactive": "the app was uninstalled or its token revoked; reinstall it",
    "msg_too_long": "the text is longer than Slack allows",
}


def status_of(response: Any) -> int:
    """The HTTP status of a failed call (slack_sdk's response, or aiohttp's for non-JSON)."""
    status = getattr(response, "status_code", None)
    if status is None:
        status = getattr(response, "status", 0)
    return int(status or 0)


def error_code(exc: SlackApiError) -> str:
    data = getattr(exc.response, "data", None)
    if isinstance(data, dict):
        return str(data.get("error") or "")
    return ""


def retry_after_seconds(response: Any) -> float | None:
    """`Retry-After` of a 429, in seconds; None when absent or unreadable."""
    headers = getattr(response, "headers", None) or {}
    value = headers.get("Retry-After") or headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None


def is_rate_limited(exc: BaseException) -> bool:
    return isinstance(exc, SlackApiError) and (
        status_of(exc.response) == 429 or error_code(exc) == "ratelimited"
    )


def is_gone(exc: BaseException) -> bool:
    return isinstance(exc, SlackApiError) and error_code(exc) in GONE_CODES


def describe(exc: BaseException) -> str:
    """One safe line about a failed call: the Slack error code, or the exception."""
    if isinstance(exc, SlackApiError):
        code = error_code(exc)
        needed = getattr(exc.response, "data", {}) or {}
        detail = code or f"HTTP {status_of(exc.response)}"
        if code == "missing_scope" and isinstance(needed, dict) and needed.get("needed"):
            detail += f" (needs {needed['needed']})"
        return redact(detail)
    return redact(f"{type(exc).__name__}: {exc}")


def send_error(exc: BaseException, action: str) -> SendError:
    """The core's view of a failed Web API call; the message never carries a token."""
    detail = f"{action}: {describe(exc)}"
    if isinstance(exc, SlackApiError):
        status = status_of(exc.response)
        code = error_code(exc)
        if is_rate_limited(exc):
            return TransientSendError(detail, retry_after=retry_after_seconds(exc.response))
        if code in TRANSIENT_CODES or status >= 500:
            return TransientSendError(detail)
        hint = HINTS.get(code)
        return PermanentSendError(f"{detail} ({hint})" if hint else detail)
    if isinstance(exc, SlackRequestError):
        return PermanentSendError(detail)  # slack_sdk refused the arguments themselves
    if isinstance(exc, CALL_ERRORS):
        return TransientSendError(detail)
    return PermanentSendError(detail)


class SlackStartError(AdapterStartError):
    """The account could not start; the message is safe to log (no token in it).

    An `AdapterStartError`, so `bcn-bridge run` prints it as one line and exits 1.
    """


def start_error(exc: BaseException, account: str, what: str) -> SlackStartError:
    """Why `what` (auth.test, apps.connections.open) failed, with the key to check."""
    if isinstance(exc, SlackApiError) and error_code(exc) in (
        "invalid_auth", "not_authed", "token_revoked", "account_inactive",
    ):
        key = "app_token" if what == "apps.connections.open" else "bot_token"
        return SlackStartError(
            f"slack:{account}: Slack rejected the {key.replace('_', ' ')} in {what} "
            f"({error_code(exc)}; check accounts.slack.{account}.{key})"
        )
    return SlackStartError(f"slack:{account}: {what} failed: {describe(exc)}")
