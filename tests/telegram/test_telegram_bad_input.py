"""Issue 31 item 6 for the Telegram webhook: with or without the secret, whatever the body,
the answer is 4xx (or 503 while starting) and the log stays bounded."""

from __future__ import annotations

import logging

import aiohttp
import pytest
from hypothesis import strategies as st
from telegram_support import MakeAdapter, Received
from test_telegram_webhook import SECRET, public_url, start_webhook, web  # noqa: F401

from adapters.telegram.webhook import SECRET_HEADER
from bridge.web.server import WebServer
from tests.support.fuzz_http import DEEP, bodies, draw, header_values, loud_lines, post_each

LOGGERS = ("adapters.telegram", "bridge.web")


async def test_a_deeply_nested_update_is_a_bad_request_logged_once(
    make_adapter: MakeAdapter, web: WebServer, public_url: str,  # noqa: F811
    received: Received, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    await start_webhook(make_adapter, web, public_url)
    body = b'{"update_id": 1, "message": ' + b"[" * DEEP + b"]" * DEEP + b"}"

    async with aiohttp.ClientSession() as session:
        answers = await post_each(session, f"{web.url}/telegram/main",
                                  [({SECRET_HEADER: SECRET}, body)] * 3)

    assert [status for status, _ in answers.statuses] == [400, 400, 400]
    assert [r.levelno for r in loud_lines(caplog.records, *LOGGERS)] == [logging.WARNING]
    assert received.empty()


async def test_fuzzed_webhook_requests_never_get_a_5xx(
    make_adapter: MakeAdapter, web: WebServer, public_url: str,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    await start_webhook(make_adapter, web, public_url)
    secrets = st.one_of(st.just(SECRET), header_values)
    cases = draw(st.tuples(secrets, bodies), 150)

    async with aiohttp.ClientSession() as session:
        answers = await post_each(session, f"{web.url}/telegram/main",
                                  [({SECRET_HEADER: secret}, body) for secret, body in cases])

    assert answers.server_errors() == []
    loud = loud_lines(caplog.records, *LOGGERS)
    assert not [r for r in loud if r.levelno >= logging.ERROR]
    assert len(loud) <= 2  # the first refusal, and the first update it cannot read
