"""Issue 31 item 6 for the hub's HTTP onboarding: any query, header and body is answered
4xx, never 5xx, and costs no traceback."""

from __future__ import annotations

import logging

import aiohttp
import pytest
from hypothesis import strategies as st

from bridge.hub import Hub
from tests.support.fuzz_http import DEEP, bodies, draw, header_values, loud_lines, post_each

LOGGERS = ("bridge.hub", "bridge.web")


async def bot_token(hub: Hub, http: aiohttp.ClientSession) -> str:
    async with http.post(f"{hub.url}/register",
                         params={"token": "reg-1", "bot-name": "Fuzzed"}) as answer:
        assert answer.status == 200
        return str((await answer.json())["bot_token"])


async def test_a_deeply_nested_descriptor_is_a_bad_request(
    start_hub, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    hub = await start_hub(register_tokens=["reg-1"])
    token = await bot_token(hub, http)
    body = b'{"name": "Fuzzed", "skills": ' + b"[" * DEEP + b"]" * DEEP + b"}"

    async with http.post(f"{hub.url}/bots/onboard", data=body,
                         headers={"Authorization": f"Bearer {token}"}) as answer:
        assert answer.status == 400
        assert (await answer.json())["error"] == "bad_request"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_fuzzed_onboarding_requests_never_get_a_5xx(
    start_hub, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    hub = await start_hub(register_tokens=["reg-1"])
    token = await bot_token(hub, http)
    auths = st.one_of(st.just(f"Bearer {token}"), header_values.map(lambda v: f"Bearer {v}"),
                      header_values)
    cases = draw(st.tuples(auths, bodies), 150)
    requests = [({"Authorization": auth, "Content-Type": "application/json"}, body)
                for auth, body in cases]
    answers = await post_each(http, f"{hub.url}/bots/onboard", requests)
    names = draw(st.tuples(header_values, header_values), 60)
    for token_value, name in names:
        async with http.post(f"{hub.url}/register",
                             params={"token": token_value, "bot-name": name}) as answer:
            answers.statuses.append((answer.status, (token_value, name)))

    assert answers.server_errors() == []
    assert not [r for r in loud_lines(caplog.records, *LOGGERS) if r.levelno >= logging.ERROR]
