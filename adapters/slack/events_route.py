"""HTTP mode: Slack POSTs events and slash commands to a route on the bridge's web server.

Every request must carry Slack's v0 signature of its body, made with the app's signing
secret less than five minutes ago; anything else is refused with 401 before Bolt sees it,
so nothing unsigned is relayed. The check runs here (with slack_sdk's `SignatureVerifier`)
rather than in Bolt's own middleware because Bolt logs every refusal at info level with the
whole body: here the first refusal is a warning saying what was wrong, later ones go to the
debug log, so a stray scanner cannot flood the log (`RefusalLog`). Signed requests —
including Slack's `url_verification` challenge — are handed to the Bolt app once their body
is a payload Bolt can read (a JSON object, or a form whose `payload` is one, nested no
deeper than `MAX_JSON_DEPTH`); a signed body that is not gets 400, never a traceback.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable
from urllib.parse import parse_qsl

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier

from adapters.slack.bolt_app import BOLT_READ_ERRORS
from bridge.web.bad_input import BadInput, parse_json
from bridge.web.refusals import RefusalLog

log = logging.getLogger(__name__)

TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
SIGNATURE_HEADER = "X-Slack-Signature"
WINDOW_SECONDS = 5 * 60
"""Slack's replay window: a signed request older (or newer) than this is refused."""
TIMESTAMP_DIGITS = 12
"""A Unix time in seconds has 10 digits until the year 2286; more is not a timestamp."""


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
        self._refusals = RefusalLog(log, f"slack:{account}")

    @property
    def refused(self) -> int:
        """Requests refused so far (the log shows only the first at warning level)."""
        return self._refusals.count

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        problem = self.problem(request, body)
        if problem is not None:
            return self._refuse(request, problem)
        problem = payload_problem(body.decode("utf-8"), request.content_type)
        if problem is not None:
            return self._refuse(request, problem, 400)
        app = self._app()
        if app is None:
            # Slack retries a request that fails, so nothing is lost while the account starts.
            return web.Response(status=503, text="not ready")
        try:
            response = await app.async_dispatch(await to_bolt_request(request))
        except BOLT_READ_ERRORS as exc:
            # Signed, and an object with a type, but shaped in a way Bolt's own matching
            # cannot read (Slack itself never sends one): the sender's error, not ours.
            return self._refuse(request, f"a signed payload Bolt cannot read "
                                         f"({type(exc).__name__}: {str(exc)[:80]})", 400)
        return await to_aiohttp_response(response)

    def problem(self, request: web.Request, body: bytes) -> str | None:
        """What is wrong with the request's signature; None when Slack signed it just now."""
        timestamp = request.headers.get(TIMESTAMP_HEADER)
        signature = request.headers.get(SIGNATURE_HEADER)
        if not timestamp or not signature:
            return "no Slack signature"
        if not (timestamp.isascii() and timestamp.isdigit()
                and len(timestamp) <= TIMESTAMP_DIGITS):
            return "an unreadable timestamp"  # int() would take 4,300 digits, a float not
        sent_at = int(timestamp)
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

    def _refuse(self, request: web.Request, problem: str, status: int = 401) -> web.Response:
        self._refusals.refused(request.remote, problem, status)
        return web.json_response({"error": "invalid request"}, status=status)


def payload_problem(body: str, content_type: str) -> str | None:
    """What keeps Bolt from reading a signed body, or None.

    The same reading as Bolt's `parse_body` (JSON when it says so or starts with "{", else
    a form, whose `payload` field is JSON), with `parse_json`'s depth bound, and what Bolt
    takes for granted: a payload is an object with a `type`, a plain form is a command.
    Anything else Bolt would answer with a traceback (500) or an "Unhandled request"
    warning each time.
    """
    if not body:
        return "an empty body"
    if content_type == "application/json" or body.startswith("{"):
        text = body
    else:
        fields = dict(parse_qsl(body, keep_blank_values=True))
        if "payload" not in fields:  # a slash command: a plain form, which Bolt reads as is
            return None if fields.get("command") else "a signed form that is not a command"
        text = fields["payload"]
    try:
        payload = parse_json(text)
    except BadInput as exc:
        return f"a signed body that cannot be read ({exc})"
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        return "a signed body that is not a Slack payload (a JSON object with a type)"
    return None
