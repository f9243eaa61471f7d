"""HTTP mode: the fake POSTs signed events to a route on the bridge's WebServer."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_support import ADA, CHANNEL, SECRETS, MakeAdapter, Sink, account_config, relayed_after

from adapters.slack import SlackAdapter
from bridge.web.server import WebServer
from tests.fakes.slack import SIGNING_SECRET, FakeSlack, post_signed


@pytest.fixture
async def web() -> AsyncIterator[WebServer]:
    server = WebServer("127.0.0.1:0")
    yield server
    await server.stop()


async def start_http(make_adapter: MakeAdapter, web: WebServer, **overrides: object) -> None:
    await make_adapter(web=web, mode="http", app_token=None, **overrides)


async def test_the_request_url_challenge_is_answered(
    fake: FakeSlack, make_adapter: MakeAdapter, web: WebServer
) -> None:
    await start_http(make_adapter, web)

    status, text = await fake.url_verification("the-challenge")

    assert status == 200
    assert json.loads(text) == {"challenge": "the-challenge"}
    assert fake.connections_opened == 0  # no Socket Mode in http mode


async def test_a_signed_event_is_acked_and_relayed(
    fake: FakeSlack, make_adapter: MakeAdapter, web: WebServer, sink: Sink
) -> None:
    await start_http(make_adapter, web, path="/hooks/slack")
    assert fake.events_url == f"{web.url}/hooks/slack"

    delivery = await fake.push(fake.human_message(CHANNEL, ADA, "over http"))
    [inbound] = await sink.wait_for(1)

    assert delivery.status == 200
    assert (inbound.text, inbound.sender.name) == ("over http", "Ada")


async def test_a_retried_event_is_relayed_once(
    fake: FakeSlack, make_adapter: MakeAdapter, web: WebServer, sink: Sink
) -> None:
    await start_http(make_adapter, web)
    first = await fake.push(fake.human_message(CHANNEL, ADA, "retried"))
    await sink.wait_for(1)

    again = await fake.redeliver(first)

    assert again.status == 200
    assert await relayed_after(fake, sink) == ["retried"]


@pytest.mark.parametrize(
    ("forgery", "problem"),
    [
        ({"headers": {"X-Slack-Signature": "v0=" + "0" * 64}}, "a bad signature"),
        ({"timestamp": int(time.time()) - 301}, "a timestamp outside Slack's 5-minute window"),
        ({"headers": {"X-Slack-Signature": ""}}, "no Slack signature"),
        ({"headers": {"X-Slack-Request-Timestamp": "soon"}}, "an unreadable timestamp"),
    ],
)
async def test_a_request_without_slacks_signature_is_refused_and_logged_once(
    fake: FakeSlack, make_adapter: MakeAdapter, web: WebServer, sink: Sink,
    caplog: pytest.LogCaptureFixture, forgery: dict[str, Any], problem: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    await start_http(make_adapter, web)
    body = json.dumps(fake.callback(fake.human_message(CHANNEL, ADA, "forged")))
    assert fake.events_url is not None

    answers = [await post_signed(fake.events_url, body, **forgery) for _ in range(2)]

    assert [status for status, _ in answers] == [401, 401]
    assert await relayed_after(fake, sink) == []
    refusals = [r for r in caplog.records if "refused a request" in r.getMessage()]
    assert [r.levelno for r in refusals] == [logging.WARNING, logging.DEBUG]
    assert problem in refusals[0].getMessage()
    for secret in SECRETS:
        assert secret not in caplog.text


async def test_a_body_signed_with_another_secret_is_refused(
    fake: FakeSlack, make_adapter: MakeAdapter, web: WebServer, sink: Sink
) -> None:
    await start_http(make_adapter, web)
    body = json.dumps(fake.callback(fake.human_message(CHANNEL, ADA, "forged")))
    assert fake.events_url is not None

    status, _ = await post_signed(fake.events_url, body, secret="not-the-signing-secret")
    challenge = json.dumps({"type": "url_verification", "challenge": "x"})
    challenge_status, _ = await post_signed(fake.events_url, challenge, secret="wrong-secret")

    assert (status, challenge_status) == (401, 401)
    assert await relayed_after(fake, sink) == []


async def test_events_before_start_ask_slack_to_retry(fake: FakeSlack, web: WebServer) -> None:
    adapter = SlackAdapter("main", account_config(fake, mode="http"), Sink(), web=web)
    await web.start()
    body = json.dumps(fake.callback(fake.human_message(CHANNEL, ADA, "too early")))

    status, _ = await post_signed(f"{web.url}/slack/main/events", body, secret=SIGNING_SECRET)

    assert status == 503
    await adapter.stop()


def test_http_mode_needs_the_web_server(fake: FakeSlack) -> None:
    with pytest.raises(ValueError, match="web server"):
        SlackAdapter("main", account_config(fake, mode="http"), Sink(), web=None)


async def test_a_slash_command_over_http_is_acked_and_relayed(
    fake: FakeSlack, make_adapter: MakeAdapter, web: WebServer, sink: Sink
) -> None:
    await start_http(make_adapter, web)

    delivery = await fake.push_command("/ask", f"<@{ADA}|ada> 6 times 7", user=ADA,
                                       channel=CHANNEL)
    [inbound] = await sink.wait_for(1)

    assert (delivery.status, delivery.text) == (200, "")
    assert inbound.text == "/ask @Ada 6 times 7"
    assert inbound.message_id.startswith("command-") and inbound.chat_id == CHANNEL
