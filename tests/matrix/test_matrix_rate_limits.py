"""A homeserver's `429 M_LIMIT_EXCEEDED`, from a real Synapse, through the bridge's outbox.

This module runs its own Synapse (the session's raises every limit): `rc_message` is tight
and the bridge's registration says `rate_limited: true`, so the bots' users are limited like
anyone else and Synapse really answers their sends with 429 and a `retry_after_ms`. The
person driving the test is exempt (the admin API's `override_ratelimit`), so every 429 is
one of the bridge's. The Echo bot streams (the default), so each reply is a send and then
edits — more events for the limit to catch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from matrix_support import BRIDGE_USER, Homeserver, Person, account_config, bot_messages

from adapters.matrix.registration import registration
from bridge.retry import Backoff
from tests.support.bridge_process import free_port
from tests.support.synapse import MessageLimit, start_synapse

ECHO = "@bcn_echo:localhost"
LIMIT = MessageLimit(per_second=1, burst_count=3)
QUESTIONS = [f"question number {n} please" for n in range(1, 7)]
WAIT = 40.0
"""Six streamed replies at one event a second take about fifteen; never asserted."""


@pytest.fixture(scope="module")
def homeserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Homeserver]:
    """This module's Synapse, rate limits on (it overrides the session's `homeserver`)."""
    folder = tmp_path_factory.mktemp("synapse-limited")
    port = free_port()
    path = folder / "registration.yaml"
    config = registration(account_config("http://127.0.0.1:1", port), rate_limited=True)
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    synapse = start_synapse(folder / "hs", path, message_limit=LIMIT)
    try:
        server = Homeserver(synapse, port)
        synapse.lift_message_limit(server.user("ada")["user_id"])
        yield server
    finally:
        synapse.stop()


def joined(user_id: str):
    return lambda events: any(
        e["type"] == "m.room.member" and e["state_key"] == user_id
        and e["content"]["membership"] == "join" for e in events)


def all_answered(events: list[dict[str, Any]]) -> list[str]:
    texts = [text for _, text in bot_messages(events, ECHO)]
    return texts if set(QUESTIONS) <= set(texts) else []


async def test_429s_are_waited_out_and_every_reply_arrives_once_in_order(
        start_system, ada: Person, caplog, monkeypatch):
    caplog.set_level(logging.WARNING, logger="bridge.core.outbox")
    waits: list[tuple[float | None, float]] = []
    """Each outbox retry: the wait the platform asked for (None: it did not) and the one
    the outbox chose (its backoff, or that wait when longer)."""

    class Recorded(Backoff):
        def next_delay(self, retry_after: float | None = None) -> float:
            delay = super().next_delay(retry_after)
            waits.append((retry_after, delay))
            return delay

    monkeypatch.setattr("bridge.core.outbox.Backoff", Recorded)
    room = await ada.create_room(invite=[BRIDGE_USER])
    system = await start_system(room)
    await ada.wait_for(room, joined(BRIDGE_USER))

    for question in QUESTIONS:
        await ada.say(room, question)

    texts = await ada.wait_for(room, all_answered, timeout=WAIT)
    await system.wait_delivered()
    events = await ada.events(room)

    # Each reply once. Not necessarily in the order asked: under 429s the outbox shows a
    # run that has not shown yet at its first output's place only when its final is queued
    # by then (bridge/core/outbox.py, `_preview`); a run whose previews were all moot while
    # its final was not in yet shows later, after runs that began after it. Showing a
    # preview there instead would cost a call more per reply, under a rate limit.
    assert sorted(texts) == sorted(QUESTIONS) and len(texts) == len(QUESTIONS)
    shown = [text for _, text in bot_messages(events, ECHO)]
    assert sorted(shown) == sorted(QUESTIONS) and len(shown) == len(QUESTIONS)  # none late
    asked = [e["content"]["body"] for e in events
             if e["type"] == "m.room.message" and e["sender"] == ada.user_id]
    assert asked == QUESTIONS  # the person was never limited: every 429 was the bridge's

    limited = [r.getMessage() for r in caplog.records
               if r.name == "bridge.core.outbox" and "RateLimited" in r.getMessage()]
    assert limited, "Synapse never answered the bots' sends with 429"
    assert all("matrix:main" in line and "retrying in" in line for line in limited)
    told = [(after, delay) for after, delay in waits if after is not None]
    assert len(told) == len(limited)  # every 429 carried Synapse's retry_after_ms ...
    assert all(after > 0 and delay >= after for after, delay in told)  # ... and was waited
    retries = system.app.metrics.registry.get_sample_value(
        "bcn_bridge_outbox_retries_total", {"channel": "matrix:main"})
    assert retries == len(waits)
    print(f"\n{len(limited)} of the bots' sends and edits were answered 429 by Synapse")
