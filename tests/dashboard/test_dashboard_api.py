"""The dashboard's HTTP side against a running bridge (embedded hub, real demo bots, sockets):
sign-in, sessions, CSRF, the JSON API, the live stream and the operator's actions."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bridge.config.sections import WebSection
from bridge.core.outbox import Lane
from bridge.dashboard.auth import COOKIE, CSRF_HEADER
from bridge.dashboard.config import DashboardSection
from bridge.store.pacing import Budget
from tests.e2e.e2e_support import System, make_config, register_testchat
from tests.support.running_bridge import WAIT, BridgeStarter

TOKEN = "correct-horse-battery-staple"
LANE = "testchat:main|room|"


@pytest.fixture(autouse=True)
def _testchat_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    register_testchat(monkeypatch)


def dashboard_config(tmp_path: Path, **dashboard: Any) -> Any:
    config = make_config(tmp_path)
    web = WebSection(listen="127.0.0.1:0", dashboard=DashboardSection(
        enabled=True, token=TOKEN, **dashboard))
    return config.model_copy(update={"web": web})


@pytest.fixture
async def system(tmp_path: Path) -> AsyncIterator[System]:
    starter = BridgeStarter(tmp_path)
    try:
        yield await starter.start(dashboard_config(tmp_path), wrap=System)
    finally:
        await starter.close()


class Operator:
    """A signed-in browser, as far as HTTP goes: the cookie jar and the CSRF token."""

    def __init__(self, base: str, http: aiohttp.ClientSession) -> None:
        self.base = base
        self.http = http
        self.csrf = ""

    async def sign_in(self, name: str = "Grace") -> None:
        async with self.http.post(f"{self.base}/dashboard/login",
                                  data={"token": TOKEN, "operator": name},
                                  allow_redirects=False) as response:
            assert response.status == 303, await response.text()
        async with self.http.get(f"{self.base}/dashboard/api/session") as response:
            assert response.status == 200
            self.csrf = (await response.json())["csrf"]

    async def get(self, path: str, **params: str) -> tuple[int, Any]:
        async with self.http.get(f"{self.base}{path}", params=params) as response:
            return response.status, await response.json()

    async def act(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        async with self.http.post(f"{self.base}{path}", json=body,
                                  headers={CSRF_HEADER: self.csrf}) as response:
            return response.status, await response.json()


@pytest.fixture
async def operator(system: System) -> AsyncIterator[Operator]:
    assert system.app.web is not None
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        op = Operator(system.app.web.url, http)
        await op.sign_in()
        yield op


async def wait_until(check: Any) -> Any:
    async with asyncio.timeout(WAIT):
        while not (found := await check()):
            await asyncio.sleep(0.02)
    return found


# ---------------------------------------------------------------------- sign-in and sessions
async def test_without_a_session_everything_answers_401(system: System) -> None:
    base = system.app.web.url
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base}/dashboard") as response:
            assert response.status == 401
            page = await response.text()
            assert 'name="token"' in page and 'action="/dashboard/login"' in page
            assert "script-src 'self'" in response.headers["Content-Security-Policy"]
        for path in ("/dashboard/api/overview", "/dashboard/api/conversations",
                     "/dashboard/api/stream", "/dashboard/api/session"):
            async with http.get(f"{base}{path}") as response:
                assert response.status == 401, path
                assert (await response.json())["error"] == "not signed in"
        async with http.post(f"{base}/dashboard/api/bindings/pause",
                             json={"binding": LANE}) as response:
            assert response.status == 401
    assert not await system.app.relay.ctx.pauses.store.all()


async def test_wrong_token_is_refused_and_logged_without_the_token(
    system: System, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{system.app.web.url}/dashboard/login",
                             data={"token": "guess-guess-guess-guess", "operator": "Mallory"},
                             allow_redirects=False) as response:
            assert response.status == 401
            assert "Wrong token." in await response.text()
            assert COOKIE not in response.cookies
    assert "dashboard sign-in refused a request from 127.0.0.1 with a wrong token" in caplog.text
    assert "guess-guess" not in caplog.text


async def test_sign_in_sets_a_strict_http_only_cookie(system: System) -> None:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.post(f"{system.app.web.url}/dashboard/login",
                             data={"token": TOKEN, "operator": "Grace\u202e\n"},
                             allow_redirects=False) as response:
            assert response.status == 303
            assert response.headers["Location"] == "/dashboard"
            header = response.headers["Set-Cookie"]
        assert "HttpOnly" in header and "SameSite=Strict" in header
        assert "Path=/dashboard" in header
        async with http.get(f"{system.app.web.url}/dashboard") as response:
            assert response.status == 200
            assert response.headers["Content-Security-Policy"].startswith("default-src 'none'")
            assert response.headers["X-Frame-Options"] == "DENY"
        async with http.get(f"{system.app.web.url}/dashboard/api/session") as response:
            session = await response.json()
    assert session["operator"] == "Grace"  # control and direction characters removed
    assert len(session["csrf"]) == 32 and session["csrf"] not in header


async def test_forged_and_expired_cookies_are_refused(system: System, operator: Operator) -> None:
    dashboard = system.app.dashboard
    assert dashboard is not None
    real = next(c for c in operator.http.cookie_jar if c.key == COOKIE).value
    body, _, sig = real.partition(".")
    base = system.app.web.url
    async with aiohttp.ClientSession(cookies={COOKIE: f"{body}.{sig[:-2]}AA"}) as http:
        async with http.get(f"{base}/dashboard/api/overview") as response:
            assert response.status == 401
    sessions = dashboard.sessions
    real_clock = sessions.clock
    sessions.clock = lambda: real_clock() + dashboard.config.session_hours * 3600 + 1
    try:
        status, body_json = await operator.get("/dashboard/api/overview")
        assert (status, body_json["error"]) == (401, "session expired")
        async with operator.http.get(f"{base}/dashboard") as response:
            assert response.status == 401
            assert "Your session has expired." in await response.text()
    finally:
        sessions.clock = real_clock


async def test_actions_need_the_csrf_header_and_this_origin(
    system: System, operator: Operator
) -> None:
    url = f"{system.app.web.url}/dashboard/api/bindings/pause"
    async with operator.http.post(url, json={"binding": LANE}) as response:
        assert response.status == 403
        assert CSRF_HEADER in (await response.json())["error"]
    async with operator.http.post(url, json={"binding": LANE},
                                  headers={CSRF_HEADER: "x" * 32}) as response:
        assert response.status == 403
    async with operator.http.post(url, json={"binding": LANE}, headers={
        CSRF_HEADER: operator.csrf, "Origin": "https://evil.example"
    }) as response:
        assert response.status == 403
        assert "origin" in (await response.json())["error"]
    assert not await system.app.relay.ctx.pauses.store.all()


async def test_guessing_the_token_is_throttled(system: System) -> None:
    async with aiohttp.ClientSession() as http:
        statuses = []
        for _ in range(11):
            async with http.post(f"{system.app.web.url}/dashboard/login",
                                 data={"token": "not-it-not-it-not-it"}) as response:
                statuses.append(response.status)
                retry_after = response.headers.get("Retry-After")
        assert statuses[:10] == [401] * 10 and statuses[10] == 429
        assert retry_after is not None and int(retry_after) > 0
        async with http.post(f"{system.app.web.url}/dashboard/login",
                             data={"token": TOKEN}, allow_redirects=False) as response:
            assert response.status == 429  # even the right token waits out the window


async def test_static_assets_are_served_without_a_session_and_nothing_else_is(
    system: System,
) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{system.app.web.url}/dashboard/static/dashboard.js") as response:
            assert response.status == 200
            assert response.content_type == "text/javascript"
        async with http.get(f"{system.app.web.url}/dashboard/static/..%2Fauth.py") as response:
            assert response.status == 404


# ---------------------------------------------------------------------- what it shows
async def test_overview_shows_health_bots_counts_and_bindings(
    system: System, operator: Operator
) -> None:
    status, overview = await operator.get("/dashboard/api/overview")
    assert status == 200
    health = {part["name"]: part for part in overview["health"]["parts"]}
    assert overview["health"]["ready"] is True
    assert health["bcn"]["up"] and health["testchat:main"]["up"]
    bots = {bot["name"]: bot for bot in overview["bots"]}
    assert bots["Echo"]["online"] and bots["Echo"]["state"] == "idle"
    assert bots["Rules"]["group"] == "demo"
    assert overview["bindings"] == [{
        "key": LANE, "channel": "testchat:main", "chat": "room", "thread": None,
        "group": "demo", "paused": False, "paused_by": None, "paused_at": None,
    }]
    before = overview["counters"]["messages_in"].get("testchat:main", 0)
    await system.chat_adapter.say("room", "hello, counters")
    await system.wait_for(lambda ms: any(m.sender == "Echo" for m in ms))

    async def moved() -> Any:
        _, now = await operator.get("/dashboard/api/overview")
        return now if now["counters"]["messages_in"].get("testchat:main", 0) > before else None

    await wait_until(moved)


async def test_the_paced_wait_shows_per_channel(
    system: System, operator: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Posts that waited for room in the platform's send limits: how many, and how long."""
    budget = Budget("testchat:main|chat:room", limit=1, window=0.3)
    monkeypatch.setattr(type(system.chat_adapter), "pacing",
                        lambda self, chat_id: (budget,))
    for n in range(3):
        await system.chat_adapter.say("room", f"paced {n}")
    await system.wait_for(lambda ms: len([m for m in ms if m.sender == "Echo"
                                          and m.kind == "final"]) >= 3)

    async def paced() -> Any:
        _, now = await operator.get("/dashboard/api/overview")
        counters = now["counters"]
        return counters if counters["paced"].get("testchat:main", 0) >= 1 else None

    counters = await wait_until(paced)
    assert counters["paced_seconds"]["testchat:main"] > 0
    metrics = await system.app.metrics.render()
    assert b'bcn_bridge_paced_total{channel="testchat:main"}' in metrics
    assert b"bcn_bridge_paced_seconds_total" in metrics


async def test_conversations_are_listed_filtered_paged_and_shown_in_order(
    system: System, operator: Operator
) -> None:
    await system.chat_adapter.say("room", "/ask Rules weather")  # Rules asks back: CLARIFY
    await system.chat_adapter.say("room", "/ask Rules what is 6*7")

    async def both() -> Any:
        _, page = await operator.get("/dashboard/api/conversations")
        states = sorted(item["state_label"] for item in page["items"])
        return page if states == ["answered", "clarifying"] else None

    page = await wait_until(both)
    newest, oldest = page["items"]
    assert newest["created_at"] >= oldest["created_at"]
    assert page["counts"] == {"clarifying": 1, "done": 1}
    waiting = next(item for item in page["items"] if item["status"] == "clarifying")
    assert waiting["chain"] == ["REQUEST", "CLARIFY"]
    assert waiting["depth"][1] == 5 and waiting["time_left_seconds"] > 0
    assert waiting["chat"] == LANE and waiting["to"] in ("Rules", "Ada")

    _, clarifying = await operator.get("/dashboard/api/conversations", state="clarifying")
    assert [item["request_id"] for item in clarifying["items"]] == [waiting["request_id"]]
    _, answered = await operator.get("/dashboard/api/conversations", state="answered",
                                     bot="rules")
    assert [item["status"] for item in answered["items"]] == ["done"]
    _, nobody = await operator.get("/dashboard/api/conversations", bot="Nobody")
    assert nobody["items"] == [] and nobody["next_cursor"] is None

    _, first = await operator.get("/dashboard/api/conversations", limit="1")
    assert len(first["items"]) == 1 and first["next_cursor"]
    _, second = await operator.get("/dashboard/api/conversations", limit="1",
                                   cursor=first["next_cursor"])
    assert [i["request_id"] for i in first["items"] + second["items"]] == [
        i["request_id"] for i in page["items"]]

    status, detail = await operator.get(f"/dashboard/api/conversations/{waiting['request_id']}")
    assert status == 200
    assert [entry["type"] for entry in detail["history"]] == ["REQUEST", "CLARIFY"]
    assert detail["history"][0]["content"]

    for params, problem in (({"state": "stuck"}, "unknown state"), ({"limit": "0"}, "limit"),
                            ({"cursor": "%%%"}, "cursor")):
        status, body = await operator.get("/dashboard/api/conversations", **params)
        assert status == 400 and problem in body["error"], params
    status, body = await operator.get("/dashboard/api/conversations/no-such-id")
    assert status == 404


async def read_events(response: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, Any]]:
    event = None
    async for raw in response.content:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: ") and event is not None:
            yield event, json.loads(line[6:])
            event = None


async def test_the_stream_pushes_the_overview_and_conversation_changes(
    system: System, operator: Operator
) -> None:
    async with operator.http.get(f"{system.app.web.url}/dashboard/api/stream") as response:
        assert response.status == 200
        assert response.content_type == "text/event-stream"
        events = read_events(response)
        async with asyncio.timeout(WAIT):
            kind, first = await anext(events)
            assert kind == "overview" and first["health"]["ready"] is True
            await system.chat_adapter.say("room", "/ask Rules what is 6*7")
            seen: list[str] = []
            async for kind, data in events:
                if kind == "conversation":
                    seen.append(data["status"])
                    assert data["chat"] == LANE
                if kind == "overview" and data["counts"].get("done") == 1:
                    break
    assert seen[0] == "open" and "done" in seen


# ---------------------------------------------------------------------- actions
async def test_cancelling_a_stuck_request(
    system: System, operator: Operator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    await system.chat_adapter.say("room", "/ask Rules weather")

    async def waiting() -> Any:
        _, page = await operator.get("/dashboard/api/conversations", state="clarifying")
        return page["items"]

    request_id = (await wait_until(waiting))[0]["request_id"]
    status, body = await operator.act(f"/dashboard/api/conversations/{request_id}/cancel",
                                      {"reason": "the weather service is down"})
    assert status == 200
    conversation = body["conversation"]
    assert conversation["status"] == "failed" and conversation["chain"][-1] == "CLOSE"
    assert conversation["history"][-1]["from"] == "Grace"
    notice = await system.wait_for(
        lambda ms: [m for m in ms if "was cancelled by operator Grace" in m.text])
    assert "the weather service is down" in notice[0].text
    assert f"operator Grace cancelled request {request_id}" in caplog.text

    status, body = await operator.act(f"/dashboard/api/conversations/{request_id}/cancel", {})
    assert status == 409 and "already closed" in body["error"]
    status, _ = await operator.act("/dashboard/api/conversations/nope/cancel", {})
    assert status == 404


async def test_answering_a_bots_question_from_the_dashboard(
    system: System, operator: Operator, caplog: pytest.LogCaptureFixture
) -> None:
    """The operator answers like a tap on the chat's card: first answer wins everywhere."""
    caplog.set_level(logging.INFO)
    await system.chat_adapter.say("room", "/ask Rules weather")

    async def waiting() -> Any:
        _, page = await operator.get("/dashboard/api/conversations", state="clarifying")
        return page["items"]

    request_id = (await wait_until(waiting))[0]["request_id"]
    _, detail = await operator.get(f"/dashboard/api/conversations/{request_id}")
    card = detail["card"]
    assert card["state"] == "open" and "Tokyo" in card["options"]
    path = f"/dashboard/api/conversations/{request_id}/answer"
    status, body = await operator.act(path, {"choice": "Atlantis"})
    assert status == 409 and "not one of this question's choices" in body["error"]
    status, body = await operator.act(path, {"choice": "own"})
    assert status == 409 and body["error"] == "Type your answer."
    status, body = await operator.act(path, {"choice": "Tokyo"})
    assert status == 200 and body["text"] == "Answered: Tokyo"
    assert body["conversation"]["card"]["outcome"] == "answered by Grace (dashboard): Tokyo"
    # The chat's card is redrawn, and the bot got the answer in the chat's conversation.
    [posted] = [m for m in system.chat.messages if m.card is not None]
    assert posted.card.outcome == "answered by Grace (dashboard): Tokyo"
    await system.wait_for(lambda ms: [m for m in ms if m.sender == "Rules"
                                      and m.card is None and "Tokyo" in m.text])
    status, body = await operator.act(path, {"choice": "Paris"})
    assert status == 404  # nothing open any more
    tap = await system.chat_adapter.tap("room", posted.card.key and
                                        f"bcn:{posted.card.key}:0", name="Bob", user_id="u-b")
    assert not tap.accepted and "answered by Grace (dashboard)" in tap.text
    assert f"Grace answered {request_id}" in caplog.text
    status, _ = await operator.act("/dashboard/api/conversations/nope/answer", {"choice": "x"})
    assert status == 404


async def test_pausing_a_binding_keeps_its_messages_from_being_answered(
    system: System, operator: Operator
) -> None:
    status, body = await operator.act("/dashboard/api/bindings/pause", {"binding": LANE})
    assert status == 200 and body["binding"]["paused"] is True
    assert body["binding"]["paused_by"] == "Grace"
    await system.wait_for(lambda ms: [m for m in ms if "paused the bots here" in m.text])
    await system.chat_adapter.say("room", "said while paused")
    status, body = await operator.act("/dashboard/api/bindings/resume", {"binding": LANE})
    assert status == 200 and body["binding"]["paused"] is False
    await system.chat_adapter.say("room", "said after the resume")
    await system.wait_for(
        lambda ms: [m for m in ms if m.sender == "Echo" and "after the resume" in m.text])
    echoed = [m.text for m in system.chat.messages if m.sender == "Echo"]
    assert not any("while paused" in text for text in echoed)

    status, body = await operator.act("/dashboard/api/bindings/pause", {"binding": "nope|x|"})
    assert status == 404
    status, body = await operator.act("/dashboard/api/bindings/pause", {})
    assert status == 400


async def test_a_pause_is_in_the_store_for_every_instance(
    system: System, operator: Operator
) -> None:
    await operator.act("/dashboard/api/bindings/pause", {"binding": LANE})
    paused = await system.app.relay.ctx.store.pauses.all()
    assert paused[LANE].by == "Grace"


async def test_releasing_what_the_loop_guard_holds(system: System, operator: Operator) -> None:
    ctx = system.app.relay.ctx
    binding = ctx.bindings[0]
    lane = Lane(binding.channel, binding.chat)
    guard = binding.loop_guard
    # A bot talking without a human: past the guard's limit its messages are held.
    for n in range(guard.max_messages + 3):
        await system.app.relay.posting.bot_output(
            lane, binding, f"bot chatter {n}", sender_label="Echo",
            run_id=None, conversation="", protocol=None, once=None)
    _, overview = await operator.get("/dashboard/api/overview")
    held = overview["held_lanes"]
    assert [h["lane"] for h in held] == [LANE] and held[0]["held"] == 3
    assert any(h["reason"] == "loop_guard" and h["count"] == 3
               for h in overview["counters"]["held"])

    status, body = await operator.act("/dashboard/api/lanes/release", {"lane": LANE})
    assert (status, body) == (200, {"released": 3, "not_kept": 0})
    await system.wait_for(lambda ms: [m for m in ms if "released by Grace" in m.text])
    await system.wait_for(lambda ms: [m for m in ms if m.text == f"bot chatter "
                                      f"{guard.max_messages + 2}"])
    status, body = await operator.act("/dashboard/api/lanes/release", {"lane": LANE})
    assert status == 404 and "holds nothing" in body["error"]


async def test_a_dashboard_off_by_default_is_not_mounted(tmp_path: Path) -> None:
    starter = BridgeStarter(tmp_path)
    config = make_config(tmp_path)
    config = config.model_copy(update={"web": WebSection(listen="127.0.0.1:0")})
    try:
        running = await starter.start(config, bots=False, wrap=System)
        assert running.app.dashboard is None
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{running.app.web.url}/dashboard") as response:
                assert response.status == 404
    finally:
        await starter.close()


def test_enabled_without_a_token_names_the_key() -> None:
    with pytest.raises(ValueError, match=re.escape("web.dashboard.token")):
        DashboardSection(enabled=True)
    with pytest.raises(ValueError, match="at least 16 characters"):
        DashboardSection(enabled=True, token="short")
