"""The push listener: where the homeserver delivers an application service's transactions.

`PUT /_matrix/app/v1/transactions/{txnId}` (and the legacy `/transactions/{txnId}`) carries
a batch of events. The homeserver resends a batch until it is acked, always under the same
txnId, so a batch is claimed in the store before it is handled (one instance of several
behind a load balancer takes it; a batch handled already is acked at once), marked done
once every event of it was handed to the core, and only then acked with 200 `{}`. A
handling that fails frees the claim and answers 500, so the homeserver's retry is handled
at once. Every request must carry the `hs_token` (`Authorization: Bearer` or the legacy
`access_token` query); a wrong one gets 403 and is logged once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from bridge.core.account_state import AccountState
from bridge.core.claims import claim_event, release_quietly
from bridge.listen import parse_listen

log = logging.getLogger(__name__)

EventSink = Callable[[dict[str, Any]], Awaitable[None]]

STOP_GRACE = 2.0
"""Seconds a stopping listener lets a transaction in hand finish; then its handling is
cancelled, its claim freed, and the homeserver sends it again to whoever runs next."""

_FORBIDDEN = {"errcode": "M_FORBIDDEN", "error": "Bad hs_token"}
_UNKNOWN_TOKEN = {"errcode": "M_UNKNOWN_TOKEN", "error": "Missing hs_token"}


TXN_CLAIM_TTL = 10.0
"""Seconds a transaction's claim holds. A bridge killed mid-transaction leaves its claim,
and the homeserver's resend to the next bridge waits that long; handing a transaction's
events to the core takes far less. Should one take longer, another instance may start on
it too: each message is still claimed on its own by the core, so none is relayed twice."""


class PushListener:
    """An aiohttp server on the account's `listen` address."""

    def __init__(self, channel: str, listen: str, hs_token: str, state: AccountState,
                 on_event: EventSink) -> None:
        self.channel = channel
        self.listen = listen
        self._hs_token = hs_token.encode()
        self.state = state
        self._prefix = f"{channel}:txn:"
        self.on_event = on_event
        self.accepting = False
        self._runner: web.AppRunner | None = None
        self._refused_logged = False
        self._in_hand: set[asyncio.Task[object]] = set()
        self.bound: tuple[str, int] | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        for prefix in ("/_matrix/app/v1", ""):
            app.router.add_put(prefix + "/transactions/{txn_id}", self.transaction)
            app.router.add_get(prefix + "/users/{user_id}", self.not_here)
            app.router.add_get(prefix + "/rooms/{alias}", self.not_here)
        app.router.add_post("/_matrix/app/v1/ping", self.ping)
        return app

    async def start(self) -> None:
        host, port = parse_listen(self.listen)
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False,
                               shutdown_timeout=STOP_GRACE)
        await runner.setup()
        site = web.TCPSite(runner, host, port, reuse_address=True)
        try:
            await site.start()
        except OSError:
            await runner.cleanup()
            raise
        self._runner = runner
        sockets = [s for s in (site._server.sockets if site._server else [])]
        self.bound = sockets[0].getsockname()[:2] if sockets else (host, port)
        self.accepting = True

    async def stop(self) -> None:
        """Take no new transaction; give those in hand `STOP_GRACE` seconds, then cancel
        them (their claims are freed, so the homeserver's resend is handled next)."""
        self.accepting = False
        if self._in_hand:
            _, late = await asyncio.wait(set(self._in_hand), timeout=STOP_GRACE)
            for task in late:
                task.cancel()
            for task in late:
                with contextlib.suppress(BaseException):
                    await task
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # -- requests ------------------------------------------------------------------------

    def _refusal(self, request: web.Request) -> web.Response | None:
        """None when the request carries the hs_token, else the answer to give."""
        given = request.headers.get("Authorization", "")
        token = given[7:] if given.startswith("Bearer ") else request.query.get("access_token")
        if token is None:
            return web.json_response(_UNKNOWN_TOKEN, status=401)
        if hmac.compare_digest(token.encode(), self._hs_token):
            return None
        if not self._refused_logged:
            self._refused_logged = True
            log.warning("%s refused a push from %s without the right hs_token (403; logged "
                        "once): is another homeserver or an old registration calling?",
                        self.channel, request.remote)
        return web.json_response(_FORBIDDEN, status=403)

    async def transaction(self, request: web.Request) -> web.Response:
        if (refusal := self._refusal(request)) is not None:
            return refusal
        if not self.accepting:
            return web.json_response({"errcode": "M_UNKNOWN", "error": "starting"}, status=503)
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"errcode": "M_NOT_JSON", "error": "not JSON"},
                                     status=400)
        events = body.get("events") if isinstance(body, dict) else None
        if not isinstance(events, list):
            return web.json_response({"errcode": "M_BAD_JSON", "error": "no events"},
                                     status=400)
        task = asyncio.current_task()
        assert task is not None
        self._in_hand.add(task)
        try:
            await self._handle(self._prefix + request.match_info["txn_id"], events)
        finally:
            self._in_hand.discard(task)
        return web.json_response({})

    async def _handle(self, key: str, events: list[object]) -> None:
        """Claim the transaction in the shared store, hand its events to the core, mark it
        seen; free the claim if anything (a cancel included) cuts that short."""
        seen, holder = self.state.store.seen, self.state.holder
        if not await claim_event(seen, key, holder, ttl=TXN_CLAIM_TTL):
            return  # handled already, here or by another instance
        try:
            for event in events:
                if isinstance(event, dict):
                    await self.on_event(event)
            await seen.add(key, self.state.clock())
        except BaseException:
            await release_quietly(seen, key, holder)
            raise

    async def ping(self, request: web.Request) -> web.Response:
        if (refusal := self._refusal(request)) is not None:
            return refusal
        return web.json_response({})

    async def not_here(self, request: web.Request) -> web.Response:
        """The bridge creates its users and rooms itself, never on the homeserver's query."""
        if (refusal := self._refusal(request)) is not None:
            return refusal
        return web.json_response({"errcode": "M_NOT_FOUND", "error": "not here"}, status=404)
