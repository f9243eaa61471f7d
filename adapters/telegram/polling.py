"""Long polling that says once when Telegram is unreachable and once when it is back.

python-telegram-bot's updater already retries `getUpdates` forever with a growing pause
(1 s, ×1.5, at most 30 s), but logs a full traceback on every failed attempt. Here the
updater's error callback stays quiet (`quiet_updater_error`) and the request object that
carries `getUpdates` reports each round trip to the core's `OutageTracker`: one warning
when an outage starts, one line when polling works again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from telegram.error import TelegramError
from telegram.request import HTTPXRequest

from adapters.telegram.redaction import redact
from bridge.core.outage import OutageTracker

log = logging.getLogger(__name__)

_POLL_TROUBLE = {
    409: "HTTP 409: another process is polling with this bot token, or a webhook is set",
    429: "HTTP 429: the Bot API asks to slow down",
}
"""Answers that keep polling from working although the server is up."""


def polling_outage(account: str) -> OutageTracker:
    """The tracker of one account's long polling."""
    return OutageTracker(
        f"telegram:{account}", lost="lost contact with the Bot API while polling",
        back="polling works again", retrying="retrying with backoff until it is back",
        logger=log,
    )


def quiet_updater_error(account: str) -> Callable[[TelegramError], None]:
    """The updater's error callback: the outage is already logged by the request."""

    def callback(exc: TelegramError) -> None:
        log.debug("telegram:%s polling error: %s", account, redact(str(exc)))

    return callback


KeepUpdates = Callable[[list[dict[str, Any]]], Awaitable[None]]
"""Writes a fetched batch to the store before python-telegram-bot sees (and confirms) it."""


class PollingRequest(HTTPXRequest):
    """The `getUpdates` transport: reports each round trip to an `OutageTracker`, and hands
    each fetched batch to `keep` first. If keeping fails, the call fails: python-telegram-bot
    then asks again with the same offset, so the batch is not confirmed unkept."""

    def __init__(
        self, health: OutageTracker, keep: KeepUpdates | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.health = health
        self.keep = keep

    async def do_request(self, *args: Any, **kwargs: Any) -> tuple[int, bytes]:
        try:
            code, payload = await super().do_request(*args, **kwargs)
        except Exception as exc:
            self.health.down(f"{type(exc).__name__}: {redact(str(exc))}")
            raise
        if code in _POLL_TROUBLE or code >= 500:
            self.health.down(f"TelegramError: {_POLL_TROUBLE.get(code, f'HTTP {code}')}")
        else:
            self.health.up()
        if code == 200 and self.keep is not None and (updates := fetched_updates(payload)):
            await self.keep(updates)
        return code, payload


def fetched_updates(payload: bytes) -> list[dict[str, Any]]:
    """The updates in a `getUpdates` answer ([] for anything else)."""
    try:
        answer = json.loads(payload)
    except ValueError:
        return []
    result = answer.get("result") if isinstance(answer, dict) else None
    if not isinstance(result, list):
        return []
    return [u for u in result if isinstance(u, dict) and isinstance(u.get("update_id"), int)]
