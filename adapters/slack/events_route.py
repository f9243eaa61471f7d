"""HTTP mode: Slack POSTs events and slash commands to a route on the bridge's web server.

Every request must carry Slack's v0 signature of its body, made with the app's signing
secret less than five minutes ago; anything else is refused with 401 before Bolt sees it,
so nothing unsigned is relayed. The check runs here (with slack_sdk's `SignatureVerifier`)
rather than in Bolt's own middleware because Bolt logs every refusal at info level with the
whole body: here the first refusal is a warning saying what was wrong, later ones go to the
debug log, so a stray scanner cannot flood the log. Signed requests — including Slack's
`url_verification` challenge — are handed to the Bolt app as they are.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier

log = logging.getLogger(__name__)

TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
SIGNATURE_HEADER = "X-Slack-Signature"
WINDOW_SECONDS = 5 * 60
"""Slack's replay window: a signed request older (or newer) than this is refused."""


class EventsRoute:
    """Checks each request's signature and hands signed ones to the account's Bolt app."""

    def __init__(
        self,
        account: str,
        signing_secret: str,
        app: Callable[[], AsyncApp | None],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.account = account
        self._verifier = SignatureVerifier(signing_secret)
        self._app = app
        self._clock = clock
        self.refused = 0
        """Requests refused so far (the log shows only the first at warning level)."""

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        problem = self.problem(request, body)
        if problem is not None:
            return self._refuse(request, problem)
        app = self._app()
        if app is None:
            # Slack retries a request that fails, so nothing is lost while the account starts.
            return web.Response(status=503, text="not ready")
        response = await app.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(response)

    def problem(self, request: web.Request, body: bytes) -> str | None:
        """What is wrong with the request's signature; None when Slack signed it just now."""
        timestamp = request.headers.get(TIMESTAMP_HEADER)
        signature = request.headers.get(SIGNATURE_HEADER)
        if not timestamp or not signature:
            return "no Slack signature"
        try:
            sent_at = int(timestamp)
        except ValueError:
            return "an unreadable timestamp"
        if abs(self._clock() - sent_at) > WINDOW_SECONDS:
            return "a timestamp outside Slack's 5-minute window"
        if not signature.isascii():
            return "a bad signature"
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return "a body that is not UTF-8"
        expected = self._verifier.generate_signature(timestamp=timestamp, body=text)
        if expected is None or not hmac.compare_digest(expected.encode(), signature.encode()):
            return "a bad signature"
        return None

    def _refuse(self, request: web.Request, problem: str) -> web.Response:
        self.refused += 1
        level = logging.WARNING if self.refused == 1 else logging.DEBUG
        log.log(
            level,
            "slack:%s refused a request from %s with %s (HTTP 401)%s",
            self.account,
            request.remote,
            problem,
            "; later refusals are logged at debug level" if self.refused == 1 else "",
        )
        return web.json_response({"error": "invalid request"}, status=401)
