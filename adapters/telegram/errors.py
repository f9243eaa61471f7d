"""python-telegram-bot errors → the core's send errors.

The outbox retries a `TransientSendError` in order after `retry_after`; a
`PermanentSendError` is logged and skipped. Two Bot API answers are not failures at all
and are recognised here so the adapter can handle them: HTML Telegram cannot parse (send
it as plain text instead) and an edit that changes nothing.
"""

from __future__ import annotations

import warnings
from datetime import timedelta

from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
    TimedOut,
)
from telegram.warnings import PTBDeprecationWarning

from adapters.telegram.redaction import redact
from bridge.core.adapter import (
    AdapterStartError,
    PermanentSendError,
    SendError,
    TransientSendError,
)


def is_parse_error(exc: TelegramError) -> bool:
    """Telegram refused the message's HTML ("Bad Request: can't parse entities: …")."""
    return isinstance(exc, BadRequest) and "can't parse entities" in exc.message.lower()


def is_not_modified(exc: TelegramError) -> bool:
    """An edit with the text the message already has; nothing to do."""
    return isinstance(exc, BadRequest) and "message is not modified" in exc.message.lower()


def is_not_editable(exc: SendError) -> bool:
    """The message belongs to another bot (a puppet's), so this one cannot edit it."""
    return "message can't be edited" in str(exc).lower()


def retry_after_seconds(exc: RetryAfter) -> float:
    """Seconds to wait; PTB 22 warns that `retry_after` turns from int into timedelta."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        wait = exc.retry_after
    return wait.total_seconds() if isinstance(wait, timedelta) else float(wait)


def send_error(exc: TelegramError, action: str) -> SendError:
    """The core's view of a failed Bot API call; the message never carries the token."""
    detail = redact(f"{action}: {type(exc).__name__}: {exc.message}")
    if isinstance(exc, RetryAfter):
        return TransientSendError(detail, retry_after=retry_after_seconds(exc))
    if isinstance(exc, ChatMigrated):
        return PermanentSendError(
            f"{detail} (the group became a supergroup: bind chat {exc.new_chat_id} instead)"
        )
    if isinstance(exc, Forbidden | InvalidToken | BadRequest):
        return PermanentSendError(detail)
    if isinstance(exc, TimedOut | NetworkError):
        return TransientSendError(detail)
    return PermanentSendError(detail)


class TelegramStartError(AdapterStartError):
    """The account could not start; the message is safe to log (no token in it or its cause),
    and `bcn-bridge run` prints it as one line."""


def start_error(exc: TelegramError, account: str) -> TelegramStartError:
    if isinstance(exc, InvalidToken):
        return TelegramStartError(
            f"telegram:{account}: the Bot API rejected the bot token "
            f"(check accounts.telegram.{account}.token)"
        )
    return TelegramStartError(
        f"telegram:{account} could not reach the Bot API: {redact(f'{type(exc).__name__}: {exc}')}"
        f"; check the network and any HTTPS proxy, or accounts.telegram.{account}.api_base_url,"
        " then start again (an orchestrator restarts it for you)"
    )
