"""`/dashboard` on the bridge's web server: the page, sign-in, the JSON API, the stream.

Every response that is not the login form needs a session; every action also needs the
CSRF header (and, when the browser sends one, an Origin of this very server). HTML goes
out with a strict Content-Security-Policy: the page runs only its own script and puts chat
text in the DOM as text, so nothing a bot or a visitor wrote can run in an operator's
browser. Each action is logged at INFO with the operator's name (`bridge.core.operator`).
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from bridge.core.operator import OperatorError
from bridge.dashboard.auth import (
    COOKIE,
    COOKIE_PATH,
    CSRF_HEADER,
    LoginThrottle,
    Session,
    SessionError,
    Sessions,
)
from bridge.dashboard.bots import BotActivity
from bridge.dashboard.config import DashboardSection
from bridge.dashboard.health import HealthWatch
from bridge.dashboard.stream import Feed
from bridge.dashboard.traffic import INTERVAL, Traffic
from bridge.dashboard.views import Views
from bridge.metrics import BridgeMetrics
from bridge.web.bad_input import BadInput, read_json
from bridge.web.origin import origin_refusal
from bridge.web.refusals import RefusalLog
from bridge.web.server import WebServer
from bridge.web.status import BridgeStatus

if TYPE_CHECKING:
    from bridge.core.relay import Relay

log = logging.getLogger(__name__)

STATIC = Path(__file__).with_name("static")
ASSETS = {"dashboard.js": "text/javascript", "dashboard.css": "text/css"}
PAGES = ("index.html", "login.html")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # "no-referrer" makes Chromium send `Origin: null`
    "Cache-Control": "no-store",
}
OVERVIEW_EVERY = 1.0
MAX_REASON_CHARS = 500
MAX_ANSWER_CHARS = 4000
"""An operator's own-words answer, at most (as the webchat's answer box)."""
MAX_PAGE = 500

Handler = Callable[[web.Request, Session], Awaitable[web.StreamResponse]]


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status,
                             headers={"Cache-Control": "no-store"})


class Dashboard:
    """Mounted on the web server before it starts; `start(relay)` once the relay runs."""

    def __init__(
        self,
        config: DashboardSection,
        status: BridgeStatus,
        metrics: BridgeMetrics,
        clock: Callable[[], datetime],
    ) -> None:
        assert config.token is not None, "DashboardSection refuses enabled without a token"
        self.config = config
        self.sessions = Sessions(config.token.get_secret_value(),
                                 lifetime=config.session_hours * 3600)
        self.throttle = LoginThrottle()
        self._refusals = RefusalLog(log, "dashboard sign-in")
        """Wrong tokens and unreadable forms: the first a warning, the rest at debug level
        (docs/operations.md, "Bad requests to the HTTP entries")."""
        self.status = status
        self.clock = clock
        self.health = HealthWatch(status, clock)
        self.bots = BotActivity()
        self.traffic = Traffic(metrics)
        self.metrics = metrics
        self.feed = Feed(self._overview)
        self.relay: Relay | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._files = {name: (STATIC / name).read_bytes() for name in (*PAGES, *ASSETS)}
        """Read once, at construction: no disk reads on the event loop per request."""

    # ------------------------------------------------------------------ lifecycle
    def mount(self, server: WebServer) -> None:
        r = server.router
        r.add_get("/dashboard", self.page)
        r.add_get("/dashboard/", self.page)
        r.add_post("/dashboard/login", self.login)
        r.add_post("/dashboard/logout", self._guarded(self.logout, action=True))
        r.add_get("/dashboard/static/{name}", self.asset)
        r.add_get("/dashboard/api/session", self._guarded(self.session_info))
        r.add_get("/dashboard/api/overview", self._guarded(self.overview))
        r.add_get("/dashboard/api/conversations", self._guarded(self.conversations))
        r.add_get("/dashboard/api/conversations/{request_id}", self._guarded(self.conversation))
        r.add_post("/dashboard/api/conversations/{request_id}/cancel",
                   self._guarded(self.cancel, action=True))
        r.add_post("/dashboard/api/conversations/{request_id}/answer",
                   self._guarded(self.answer, action=True))
        r.add_post("/dashboard/api/lanes/release", self._guarded(self.release, action=True))
        r.add_post("/dashboard/api/bindings/pause", self._guarded(self.pause, action=True))
        r.add_post("/dashboard/api/bindings/resume", self._guarded(self.resume, action=True))
        r.add_get("/dashboard/api/stream", self._guarded(self.stream))
        server.app.on_shutdown.append(self._shutdown)

    async def start(self, relay: Relay) -> None:
        self.relay = relay
        self._views = Views(relay, self.health, self.bots, self.traffic)
        subscription = relay.events.subscribe()
        self._tasks = [
            asyncio.create_task(self._watch(subscription), name="dashboard-events"),
            asyncio.create_task(self._every(OVERVIEW_EVERY, self.feed.refresh),
                                name="dashboard-feed"),
            asyncio.create_task(self._every(INTERVAL, self._sample), name="dashboard-traffic"),
        ]
        log.info("dashboard at /dashboard (token sign-in, sessions of %g h)",
                 self.config.session_hours)

    async def stop(self) -> None:
        self.feed.close()
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.relay = None

    async def _shutdown(self, _app: web.Application) -> None:
        self.feed.close()

    async def _watch(self, subscription: Any) -> None:
        try:
            while True:
                event = await subscription.next()
                self.bots.see(event)
                if event.kind == "conversation":
                    self.feed.conversation(event.data)
        finally:
            subscription.close()

    async def _every(self, seconds: float, step: Callable[[], Awaitable[None]]) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await step()
            except Exception:
                log.exception("dashboard: %s failed", getattr(step, "__name__", step))

    async def _sample(self) -> None:
        await self.status.sample(self.metrics)  # outbox depth, as /metrics reads it
        self.traffic.sample(self.clock())

    async def _overview(self) -> dict[str, Any]:
        if self.relay is None:
            return {"now": self.clock().isoformat(), "health": self.health.read()}
        return await self._views.overview()

    # ------------------------------------------------------------------ auth
    def _guarded(self, handler: Handler, *, action: bool = False) -> Callable[
        [web.Request], Awaitable[web.StreamResponse]
    ]:
        async def guarded(request: web.Request) -> web.StreamResponse:
            try:
                session = self.sessions.check(request.cookies.get(COOKIE))
            except SessionError as exc:
                return _error(401, str(exc))
            if action:
                if not self.sessions.csrf_matches(session, request.headers.get(CSRF_HEADER)):
                    return _error(403, f"missing or wrong {CSRF_HEADER} header")
                if origin_refusal(request, None) is not None:
                    return _error(403, "the request came from another origin")
            if self.relay is None and request.path.startswith("/dashboard/api/") and \
                    request.path != "/dashboard/api/session":
                return _error(503, "the bridge is starting or stopping")
            return await handler(request, session)

        return guarded

    def _login_page(self, message: str, status: int = 401) -> web.Response:
        text = self._files["login.html"].decode("utf-8")
        body = text.replace("{{message}}", html.escape(message))
        return web.Response(text=body, status=status, content_type="text/html",
                            headers=PAGE_HEADERS)

    async def page(self, request: web.Request) -> web.Response:
        try:
            self.sessions.check(request.cookies.get(COOKIE))
        except SessionError as exc:
            return self._login_page("Your session has expired." if exc.expired else "")
        return web.Response(body=self._files["index.html"], content_type="text/html",
                            charset="utf-8", headers=PAGE_HEADERS)

    async def asset(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in ASSETS:
            raise web.HTTPNotFound()
        return web.Response(body=self._files[name], content_type=ASSETS[name],
                            headers={"X-Content-Type-Options": "nosniff",
                                     "Cache-Control": "no-cache"})

    async def login(self, request: web.Request) -> web.Response:
        address = request.remote or "unknown"
        wait = self.throttle.blocked(address)
        if wait is not None:
            self._refusals.refused(address, "too many wrong tokens", 429)
            response = self._login_page(
                f"Too many wrong tokens; try again in {int(wait)} s.", status=429)
            response.headers["Retry-After"] = str(int(wait))
            return response
        if origin_refusal(request, None) is not None:
            return self._login_page("Sign in from this server's own page.", status=403)
        try:
            form = await request.post()
        except (ValueError, LookupError) as exc:  # LookupError: a charset Python has no codec for
            self._refusals.refused(address, f"an unreadable form ({type(exc).__name__})", 400)
            return self._login_page("The sign-in form could not be read.", status=400)
        token, operator = form.get("token"), form.get("operator")
        if not isinstance(token, str) or not self.sessions.token_matches(token):
            self.throttle.failed(address)
            self._refusals.refused(address, "a wrong token", 401)
            return self._login_page("Wrong token.")
        session = self.sessions.issue(operator if isinstance(operator, str) else "")
        log.info("dashboard: %s signed in from %s", session.operator, address)
        response = web.HTTPSeeOther("/dashboard")
        response.set_cookie(
            COOKIE, session.cookie, path=COOKIE_PATH, httponly=True, samesite="Strict",
            max_age=int(self.config.session_hours * 3600), secure=self._secure(request),
        )
        raise response

    def _secure(self, request: web.Request) -> bool:
        if self.config.secure_cookie is not None:
            return self.config.secure_cookie
        return request.secure or request.headers.get("X-Forwarded-Proto", "") == "https"

    async def logout(self, request: web.Request, session: Session) -> web.Response:
        log.info("dashboard: %s signed out", session.operator)
        response = web.json_response({"signed_out": True})
        response.del_cookie(COOKIE, path=COOKIE_PATH)
        return response

    async def session_info(self, request: web.Request, session: Session) -> web.Response:
        return web.json_response({
            "operator": session.operator,
            "csrf": session.csrf,
            "expires_at": datetime.fromtimestamp(session.expires_at, self.clock().tzinfo)
            .isoformat(),
        }, headers={"Cache-Control": "no-store"})

    # ------------------------------------------------------------------ reads
    async def overview(self, request: web.Request, session: Session) -> web.Response:
        return web.json_response(await self._views.overview(), dumps=_dumps)

    async def conversations(self, request: web.Request, session: Session) -> web.Response:
        query = request.query
        try:
            limit = int(query.get("limit") or 50)
            if not 1 <= limit <= MAX_PAGE:
                raise ValueError(f"limit must be between 1 and {MAX_PAGE}")
            body = await self._views.conversations(
                state=query.get("state"), chat=query.get("chat"), bot=query.get("bot"),
                cursor=query.get("cursor"), limit=limit,
            )
        except ValueError as exc:
            return _error(400, str(exc))
        return web.json_response(body, dumps=_dumps)

    async def conversation(self, request: web.Request, session: Session) -> web.Response:
        request_id = request.match_info["request_id"]
        found = await self._views.conversation(request_id)
        if found is None:
            return _error(404, f"no tracked conversation with request id {request_id!r}")
        return web.json_response(found, dumps=_dumps)

    async def stream(self, request: web.Request, session: Session) -> web.StreamResponse:
        return await self.feed.serve(request)

    # ------------------------------------------------------------------ actions
    async def _body(self, request: web.Request) -> dict[str, Any]:
        if request.content_type != "application/json":
            raise OperatorError("expected a JSON body (Content-Type: application/json)", 415)
        try:
            body = await read_json(request)
        except BadInput as exc:
            raise OperatorError(str(exc), 400) from None
        if not isinstance(body, dict):
            raise OperatorError("expected a JSON object", 400)
        return body

    @staticmethod
    def _text(body: dict[str, Any], key: str, *, required: bool = True) -> str:
        value = body.get(key)
        if value is None and not required:
            return ""
        if not isinstance(value, str) or (required and not value):
            raise OperatorError(f"expected {key!r}: a string", 400)
        return value

    async def _act(self, work: Callable[[], Awaitable[dict[str, Any]]]) -> web.Response:
        try:
            return web.json_response(await work(), dumps=_dumps)
        except OperatorError as exc:
            return _error(exc.status, str(exc))

    async def cancel(self, request: web.Request, session: Session) -> web.Response:
        assert self.relay is not None
        operator = self.relay.operator

        async def work() -> dict[str, Any]:
            body = await self._body(request)
            reason = self._text(body, "reason", required=False).strip()[:MAX_REASON_CHARS]
            conv = await operator.cancel(request.match_info["request_id"],
                                         by=session.operator, reason=reason)
            return {"conversation": await self._views.conversation(conv.request_id)}

        return await self._act(work)

    async def answer(self, request: web.Request, session: Session) -> web.Response:
        """Answer a bot's question as the signed-in operator: settled like a tap on its
        card in any chat (first answer wins, everywhere)."""
        assert self.relay is not None
        decisions = self.relay.decisions

        async def work() -> dict[str, Any]:
            body = await self._body(request)
            choice = self._text(body, "choice")
            text = self._text(body, "text", required=False)[:MAX_ANSWER_CHARS] or None
            request_id = request.match_info["request_id"]
            reply = await decisions.operator_answer(request_id, session.operator,
                                                    choice=choice, text=text)
            if reply is None:
                raise OperatorError(f"request {request_id!r} has no open question to answer",
                                    404)
            log.info("dashboard: %s answered %s with %r: %s", session.operator, request_id,
                     choice, reply.text)
            if not reply.accepted:
                raise OperatorError(reply.text, 409)
            return {"answered": True, "text": reply.text,
                    "conversation": await self._views.conversation(request_id)}

        return await self._act(work)

    async def release(self, request: web.Request, session: Session) -> web.Response:
        assert self.relay is not None
        operator = self.relay.operator

        async def work() -> dict[str, Any]:
            lane = self._text(await self._body(request), "lane")
            done = await operator.release(lane, by=session.operator)
            return {"released": len(done.items), "not_kept": done.not_kept}

        return await self._act(work)

    async def pause(self, request: web.Request, session: Session) -> web.Response:
        return await self._pause_or_resume(request, session, pause=True)

    async def resume(self, request: web.Request, session: Session) -> web.Response:
        return await self._pause_or_resume(request, session, pause=False)

    async def _pause_or_resume(
        self, request: web.Request, session: Session, *, pause: bool
    ) -> web.Response:
        assert self.relay is not None
        operator = self.relay.operator

        async def work() -> dict[str, Any]:
            key = self._text(await self._body(request), "binding")
            binding = operator.binding(key)
            if pause:
                await operator.pause(key, by=session.operator)
            else:
                await operator.resume(key, by=session.operator)
            return {"binding": await self._views.binding_view(binding)}

        return await self._act(work)


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str)
