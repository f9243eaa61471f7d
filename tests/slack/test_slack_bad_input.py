"""Issue 31 item 6: whatever reaches the Slack route, the answer is 4xx and the log stays
quiet — never a 500 with a traceback.

Real HTTP against the running route (HTTP mode), signed with the test signing secret where
the case is a signed-but-malformed body.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest
from hypothesis import strategies as st
from slack_support import ADA, CHANNEL, MakeAdapter, Sink, relayed_after

from bridge.web.server import WebServer
from tests.fakes.slack import SIGNING_SECRET, FakeSlack, post_signed, signed_headers
from tests.support.fuzz_http import (
    DEEP,
    bodies,
    draw,
    header_values,
    json_values,
    loud_lines,
    post_each,
)

LOGGERS = ("adapters.slack", "bridge.web", "slack_bolt")
FORM = "application/x-www-form-urlencoded"

PAYLOAD_TYPES = ("event_callback", "url_verification", "block_actions", "view_submission",
                 "shortcut", "message_action", "app_rate_limited", "no_such_type")
slack_shaped = st.fixed_dictionaries(
    {"type": st.sampled_from(PAYLOAD_TYPES)},
    optional={"event": json_values, "team_id": json_values, "challenge": json_values,
              "user": json_values, "actions": json_values, "view": json_values,
              "authorizations": json_values, "event_id": json_values},
).map(lambda payload: json.dumps(payload).encode())
"""Payloads with Slack's outer shape and anything inside: what reaches Bolt itself."""


@pytest.fixture
async def web() -> AsyncIterator[WebServer]:
    server = WebServer("127.0.0.1:0")
    yield server
    await server.stop()


@pytest.fixture
async def events_url(fake: FakeSlack, make_adapter: MakeAdapter, web: WebServer) -> str:
    await make_adapter(web=web, mode="http", app_token=None)
    assert fake.events_url is not None
    return fake.events_url


async def test_a_400_digit_timestamp_is_refused_with_401_and_one_log_line(
    events_url: str, fake: FakeSlack, sink: Sink, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    body = json.dumps(fake.callback(fake.human_message(CHANNEL, ADA, "overflow")))
    huge = {"X-Slack-Request-Timestamp": "9" * 400}

    answers = [await post_signed(events_url, body, headers=huge) for _ in range(3)]

    assert [status for status, _ in answers] == [401, 401, 401]
    assert await relayed_after(fake, sink) == []
    loud = loud_lines(caplog.records, *LOGGERS)
    assert [(r.levelno, "an unreadable timestamp" in r.getMessage()) for r in loud] == [
        (logging.WARNING, True)]


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        pytest.param("not json at all", "application/json", id="not-json"),
        pytest.param("[" * DEEP + "]" * DEEP, "application/json", id="deep-array"),
        pytest.param('{"a":' * DEEP + "1" + "}" * DEEP, "application/json", id="deep-object"),
        pytest.param('["an", "array"]', "application/json", id="array"),
        pytest.param('{"type": "event_callback"', "application/json", id="cut-short"),
        pytest.param("payload=" + "%5B" * DEEP, FORM, id="deep-form-payload"),
        pytest.param("payload=not+json", FORM, id="form-payload-not-json"),
        pytest.param("payload=%5B1%2C2%5D", FORM, id="form-payload-array"),
    ],
)
async def test_a_signed_body_bolt_cannot_read_gets_400_not_a_traceback(
    events_url: str, fake: FakeSlack, sink: Sink, caplog: pytest.LogCaptureFixture,
    body: str, content_type: str,
) -> None:
    caplog.set_level(logging.DEBUG)

    answers = [await post_signed(events_url, body, content_type=content_type)
               for _ in range(2)]

    assert [status for status, _ in answers] == [400, 400]
    loud = loud_lines(caplog.records, *LOGGERS)
    assert [r.levelno for r in loud] == [logging.WARNING]
    assert not any(r.exc_info for r in caplog.records)
    # the route still works for Slack afterwards
    delivery = await fake.push(fake.human_message(CHANNEL, ADA, "still fine"))
    assert delivery.status == 200
    assert [m.text for m in await sink.wait_for(1)] == ["still fine"]


async def test_fuzzed_headers_and_bodies_never_get_a_5xx(
    events_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Unsigned (or wrongly signed) requests: any timestamp, signature and body."""
    caplog.set_level(logging.DEBUG)
    cases = draw(st.tuples(header_values, header_values, bodies), 150)
    requests = [({"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": sig,
                  "Content-Type": "application/json"}, body) for stamp, sig, body in cases]

    async with aiohttp.ClientSession() as session:
        answers = await post_each(session, events_url, requests)

    assert answers.server_errors() == []
    assert len(loud_lines(caplog.records, *LOGGERS)) <= 1  # the first refusal, only


async def test_fuzzed_signed_bodies_never_get_a_5xx(
    events_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Signed with the real secret: the signature passes, then the body is anything."""
    caplog.set_level(logging.DEBUG)
    cases = draw(st.tuples(bodies | slack_shaped, st.sampled_from(
        ["application/json", FORM, "text/plain"])), 200)
    requests = []
    for body, content_type in cases:
        text = body.decode("utf-8", "replace")
        headers = signed_headers(SIGNING_SECRET, text, int(time.time()))
        requests.append(({**headers, "Content-Type": content_type}, text.encode()))

    async with aiohttp.ClientSession() as session:
        answers = await post_each(session, events_url, requests)

    assert answers.server_errors() == []
    loud = loud_lines(caplog.records, *LOGGERS)
    assert not [r for r in loud if r.levelno >= logging.ERROR]
    assert len(loud) <= 3  # one line per kind of refusal: bounded, whatever the count
