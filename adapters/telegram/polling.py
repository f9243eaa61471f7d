"""Long polling that says once when Telegram is unreachable and once when it is back.

python-telegram-bot's updater already retries `getUpdates` forever with a growing pause
(1 s, ×1.5, at most 30 s), but logs a full traceback on every failed attempt. Here the
updater's error callback stays quiet and the request object that carries `getUpdates`
reports the outage: one warning when it starts, one line when polling works again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from telegram.error import TelegramError
from telegram.request import HTTPXRequest

from adapters.telegram.redaction import redact

log = logging.getLogger(__name__)

_POLL_TROUBLE = {
    409: "HTTP 409: another process is polling with this bot token, or a webhook is set",
    429: "HTTP 429: the Bot API asks to slow down",
}
"""Answers that keep polling from working although the server is up."""


class PollingHealth:
    """Remembers whether polling is in an outage, so each outage is logged once."""

    def __init__(self, account: str) -> None:
        self.account = account
        self.failures = 0

    @property
    def in_outage(self) -> bool:
        return self.failures > 0

    def failed(self, exc: BaseException) -> None:
        self.failures += 1
        if self.failures == 1:
            log.warning(
                "telegram:%s lost contact with the Bot API while polling (%s: %s); "
                "retrying with backoff until it is back",
                self.account,
                type(exc).__name__,
                redact(str(exc)),
            )

    def succeeded(self) -> None:
        if self.failures:
            log.info(
                "telegram:%s polling works again after %d failed attempt(s)",
                self.account,
                self.failures,
            )
        self.failures = 0

    def updater_error(self, exc: TelegramError) -> None:
        """The updater's error callback: the outage is already logged by the request."""
        log.debug("telegram:%s polling error: %s", self.account, redact(str(exc)))


KeepUpdates = Callable[[list[dict[str, Any]]], Awaitable[None]]
"""Writes a fetched batch to the store before python-telegram-bot sees (and confirms) it."""


class PollingRequest(HTTPXRequest):
    """The `getUpdates` transport: reports each round trip to a `PollingHealth`, and hands
    each fetched batch to `keep` first. If keeping fails, the call fails: python-telegram-bot
    then asks again with the same offset, so the batch is not confirmed unkept."""

    def __init__(
        self, health: PollingHealth, keep: KeepUpdates | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.health = health
        self.keep = keep

    async def do_request(self, *args: Any, **kwargs: Any) -> tuple[int, bytes]:
        try:
            code, payload = await super().do_request(*args, **kwargs)
        except Exception as exc:
            self.health.failed(exc)
            raise
        if code in _POLL_TROUBLE or code >= 500:
            self.health.failed(TelegramError(_POLL_TROUBLE.get(code, f"HTTP {code}")))
        else:
            self.health.succeeded()
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
