"""Replies due at once in one Slack channel: paced at Slack's published limit (about one
message a second), not told to wait. The fake Slack enforces that limit here (`channel_limit`:
a 429 with Retry-After past it); the bridge runs with its default `send_limits`. The example
Echo bot streams, so each reply is a post and its edits, and all of them count."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import test_slack_e2e
from slack_support import ADA, CHANNEL
from test_slack_e2e import said_by

from bridge.config.limits import SendLimit

start_system = test_slack_e2e.start_system

BURST = 6


async def burst_answered(start_system: Callable[..., Any], **account: Any
                         ) -> tuple[int, float, int]:
    """The burst, until every message shows its one reply: 429s, seconds, posts and edits."""
    system = await start_system(**account)
    fake = system.slack
    fake.channel_limit = (1, 1.0)
    started = time.monotonic()
    for n in range(BURST):
        await fake.push(fake.human_message(CHANNEL, ADA, f"burst {n}"))
    expected = sorted(f"burst {n}" for n in range(BURST))
    await system.shown(lambda m: sorted(said_by(m, "Echo")) == expected or None)
    took = time.monotonic() - started
    sends = len(fake.calls_to("chat.postMessage")) + len(fake.calls_to("chat.update"))
    return fake.rate_limited, took, sends


async def test_a_burst_into_a_channel_is_paced_under_slacks_limit(
    start_system: Callable[..., Any],
) -> None:
    defaults = SendLimit(count=1, seconds=1)
    refusals, took, sends = await burst_answered(
        start_system, send_limits={"channel": defaults.model_dump()})
    print(f"\npaced: {BURST} replies, {sends} posts and edits, {refusals} answered 429, "
          f"all shown after {took:.1f} s (the limit allows no less than {sends - 1:.0f} s)")
    assert refusals <= 1


async def test_without_pacing_the_same_burst_is_told_to_wait(
    start_system: Callable[..., Any],
) -> None:
    refusals, took, _ = await burst_answered(start_system)  # slack_support: unpaced
    print(f"\nunpaced: {BURST} replies, {refusals} answered 429, all shown after {took:.1f} s")
    assert refusals > 1
