"""The webhook route: Telegram POSTs updates to the bridge's web server.

Telegram sends the configured secret in `X-Telegram-Bot-Api-Secret-Token` with every
update; anything without the right secret is refused before its body is read. The route is
never derived from the bot token, so no URL the bridge exposes carries it. Every refusal
(a wrong secret, a body that is not an update) is one throttled log line (`RefusalLog`).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from bridge.web.bad_input import BadInput, read_json
from bridge.web.refusals import RefusalLog

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
        self._refusals = RefusalLog(log, f"telegram:{account} webhook")

    async def handle(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER)
        if given is None:
            return self._refuse(request, 401, "no secret token")
        if not hmac.compare_digest(given.encode("utf-8", "surrogateescape"), self._secret):
            return self._refuse(request, 403, "a wrong secret token")
        try:
            update = await read_json(request)
        except BadInput as exc:
            return self._refuse(request, 400, f"a body that is not an update ({exc})")
        if not isinstance(update, dict) or "update_id" not in update:
            return self._refuse(request, 400, "a body that is not an update (no update_id)")
        try:
            accepted = await self._receive(update)
        except BadUpdate as exc:
            return self._refuse(request, 400, f"an update it cannot read ({exc})")
        if not accepted:
            # Telegram retries non-2xx answers, so nothing is lost while we start up.
            return web.Response(status=503, text="not ready")
        return web.Response(text="ok")

    def _refuse(self, request: web.Request, status: int, problem: str) -> web.Response:
        self._refusals.refused(request.remote, problem, status)
        text = {401: "unauthorized", 403: "forbidden"}.get(status, "expected a JSON update")
        return web.Response(status=status, text=text)
