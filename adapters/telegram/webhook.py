"""The webhook route: Telegram POSTs updates to the bridge's web server.

Telegram sends the configured secret in `X-Telegram-Bot-Api-Secret-Token` with every
update; anything without the right secret is refused before its body is read. The route is
never derived from the bot token, so no URL the bridge exposes carries it.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"

UpdateReceiver = Callable[[dict[str, Any]], Awaitable[bool]]
"""Takes one update (Bot API JSON); False while the account is not running yet; raises
`BadUpdate` when the JSON is not a Telegram update."""


class BadUpdate(ValueError):
    """The body is JSON but not an update python-telegram-bot can read."""


class WebhookRoute:
    """Checks the secret on each request and hands valid updates to the adapter."""

    def __init__(self, account: str, secret: str, receive: UpdateReceiver) -> None:
        self.account = account
        self._secret = secret.encode()
        self._receive = receive

    async def handle(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER)
        if given is None:
            return self._refuse(request, 401, "no secret token")
        if not hmac.compare_digest(given.encode("utf-8", "surrogateescape"), self._secret):
            return self._refuse(request, 403, "a wrong secret token")
        try:
            update = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return web.Response(status=400, text="expected a JSON update")
        if not isinstance(update, dict) or "update_id" not in update:
            return web.Response(status=400, text="expected a JSON update")
        try:
            accepted = await self._receive(update)
        except BadUpdate as exc:
            log.warning(
                "telegram:%s webhook got an update it cannot read (%s); answered HTTP 400",
                self.account,
                exc,
            )
            return web.Response(status=400, text="expected a JSON update")
        if not accepted:
            # Telegram retries non-2xx answers, so nothing is lost while we start up.
            return web.Response(status=503, text="not ready")
        return web.Response(text="ok")

    def _refuse(self, request: web.Request, status: int, problem: str) -> web.Response:
        log.warning(
            "telegram:%s webhook refused a request from %s with %s (HTTP %d)",
            self.account,
            request.remote,
            problem,
            status,
        )
        return web.Response(status=status, text="unauthorized" if status == 401 else "forbidden")
