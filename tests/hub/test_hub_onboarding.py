"""HTTP onboarding over a real socket: POST /register and POST /bots/onboard.

Shapes and status codes are the BCN server's, so its own clients can register themselves.
"""

from __future__ import annotations

import aiohttp
import pytest
from hub_clients import TestBot, TestLink

from bridge.hub import Hub

REGISTER = "reg-token-0123456789"


@pytest.fixture
async def onboarding_hub(start_hub: object) -> Hub:
    return await start_hub(register_tokens=[REGISTER])  # type: ignore[operator,no-any-return]


async def register(
    http: aiohttp.ClientSession, hub: Hub, **query: str
) -> tuple[int, dict[str, object], aiohttp.ClientResponse]:
    async with http.post(hub.http_url + "/register", params=query) as response:
        return response.status, await response.json(), response


async def test_register_then_onboard_then_connect(
    http: aiohttp.ClientSession, onboarding_hub: Hub
) -> None:
    hub = onboarding_hub
    link = await TestLink.connect(http, hub)
    status, body, response = await register(http, hub, token=REGISTER, **{"bot-name": "Mantis"})
    assert status == 200 and response.headers["Cache-Control"] == "no-store"
    assert body["bot_name"] == "Mantis"
    uuid, token = str(body["bot_uuid"]), str(body["bot_token"])
    assert uuid.startswith("bot-") and token.startswith("tok-")
    changed = await link.events.get()  # Mantis is listed in group grp: links hear of it
    assert changed.event == "channel.participants.changed"

    descriptor = {"name": "Mantis", "summary": "Looks into things", "domains": ["ops"],
                  "skills": ["triage", {"name": "sql", "description": "queries"}],
                  "scopes": ["logs"]}
    async with http.post(hub.http_url + "/bots/onboard", json=descriptor,
                         headers={"Authorization": f"Bearer {token}"}) as response:
        assert response.status == 200
        onboarded = await response.json()
    assert onboarded["onboarded"] is True and onboarded["bot_uuid"] == uuid
    assert onboarded["capabilities"]["skills"][1] == {"name": "sql", "description": "queries"}

    bot = await TestBot.connect(http, hub, bot_id=uuid, token=token, protocol_version=2)
    assert bot.payload["is_new"] is False and bot.uuid == uuid
    listed = await link.conn.request("channel.participants", {"group_id": "grp"})
    mantis = next(p for p in listed["participants"] if p["name"] == "Mantis")
    assert mantis["online"] is True and mantis["summary"] == "Looks into things"


async def test_descriptors_survive_a_restart(
    http: aiohttp.ClientSession, tmp_path: object
) -> None:
    from hub_clients import hub_config

    config = hub_config(tmp_path, register_tokens=[REGISTER])
    async with Hub(config) as hub:
        _, body, _ = await register(http, hub, token=REGISTER, **{"bot-name": "Mantis"})
        async with http.post(hub.http_url + "/bots/onboard", json={"summary": "kept"},
                             headers={"Authorization": f"Bearer {body['bot_token']}"}) as r:
            assert r.status == 200
    async with Hub(config) as hub:
        record = hub.state.registry.by_uuid(str(body["bot_uuid"]))  # type: ignore[union-attr]
        assert record is not None and record.profile is not None
        assert record.profile["summary"] == "kept"


@pytest.mark.parametrize("query, status, error, words", [
    ({"bot-name": "Mantis"}, 400, "bad_request", "missing required parameter: token"),
    ({"token": REGISTER}, 400, "bad_request", "missing required parameter: bot-name"),
    ({"token": REGISTER, "bot-name": "   "}, 400, "bad_request", "bot-name"),
    ({"token": REGISTER, "bot-name": "M"}, 400, "bad_request", "2-64 characters, got 1"),
    ({"token": REGISTER, "bot-name": "x" * 65}, 400, "bad_request", "got 65"),
    ({"token": REGISTER, "bot-name": "@Mantis"}, 400, "bad_request", "'@'"),
    ({"token": REGISTER, "bot-name": "all"}, 400, "bad_request", "reserved"),
    ({"token": "wrong", "bot-name": "Mantis"}, 401, "unauthorized", "invalid register token"),
])
async def test_register_errors_are_clear(
    http: aiohttp.ClientSession, onboarding_hub: Hub, query: dict[str, str], status: int,
    error: str, words: str
) -> None:
    got, body, _ = await register(http, onboarding_hub, **query)
    assert (got, body["error"]) == (status, error) and words in str(body["message"])


async def test_taken_names_and_closed_registration(
    http: aiohttp.ClientSession, onboarding_hub: Hub, start_hub: object
) -> None:
    await register(http, onboarding_hub, token=REGISTER, **{"bot-name": "Mantis"})
    status, body, _ = await register(http, onboarding_hub, token=REGISTER,
                                     **{"bot_name": "mantis"})  # the alias, any case
    assert (status, body["error"]) == (409, "conflict")
    closed = await start_hub()  # type: ignore[operator]
    status, body, _ = await register(http, closed, token=REGISTER, **{"bot-name": "Other"})
    assert (status, body["error"]) == (401, "unauthorized")


@pytest.mark.parametrize("headers, payload, status, error", [
    ({}, {"name": "Mantis"}, 401, "unauthorized"),
    ({"Authorization": "Bearer tok-nobody"}, {}, 401, "unauthorized"),
    ({"Authorization": "Basic abc"}, {}, 401, "unauthorized"),
    ("TOKEN", "not json", 400, "bad_request"),
    ("TOKEN", [1, 2], 400, "bad_request"),
    ("TOKEN", {"summary": 5}, 400, "bad_request"),
    ("TOKEN", {"domains": "ops"}, 400, "bad_request"),
    ("TOKEN", {"skills": [3]}, 400, "bad_request"),
    ("TOKEN", {"name": "Someone Else"}, 409, "conflict"),
])
async def test_onboard_errors_are_clear(
    http: aiohttp.ClientSession, onboarding_hub: Hub, headers: object, payload: object,
    status: int, error: str
) -> None:
    _, body, _ = await register(http, onboarding_hub, token=REGISTER, **{"bot-name": "Mantis"})
    if headers == "TOKEN":
        headers = {"Authorization": f"Bearer {body['bot_token']}"}
    data = payload if isinstance(payload, str) else None
    json_body = None if isinstance(payload, str) else payload
    async with http.post(onboarding_hub.http_url + "/bots/onboard", data=data, json=json_body,
                         headers=headers) as response:  # type: ignore[arg-type]
        assert response.status == status
        answer = await response.json()
    assert answer["error"] == error and answer["message"]


async def test_tokens_stay_out_of_logs(
    http: aiohttp.ClientSession, onboarding_hub: Hub, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    _, body, _ = await register(http, onboarding_hub, token=REGISTER, **{"bot-name": "Mantis"})
    await register(http, onboarding_hub, token="guess-" + REGISTER, **{"bot-name": "Other"})
    assert "Mantis" in caplog.text
    assert REGISTER not in caplog.text and str(body["bot_token"]) not in caplog.text
