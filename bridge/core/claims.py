"""Claim before handling: the one instance that handles an inbound event, across instances.

Several bridge instances on one store can each be handed the same event — Slack retries an
event unacked for 3 s on another socket, a standby Telegram poller re-reads updates whose
offset a killed poller never confirmed, a Discord gateway replays after a resume. A check
(`seen.has`) followed by `seen.add` after handling lets two of them through between the two;
`seen.claim` is one atomic step in the store, so exactly one takes the event.

A refused claim means one of two things, and they must not be confused: the event was
handled (its key is seen: drop the repeat), or another instance is handling it right now, or
was until it died. Dropping in the second case would lose the event for good when the
claimant was killed (the repeat was its redelivery, and the platform counts it delivered), so
`claim_event` waits instead: until the key is seen (the claimant finished: drop) or the
claim is free again (released after a failure, or expired after `CLAIM_TTL`: handle it).
Waiting costs store reads only on that contended path; the usual message pays one claim.

A claimant that is a process of this host that no longer runs (`instance.is_dead_here`, as
for leases) is not waited for: its claim is taken over at once. That is the single bridge
restarted after a kill -9, to which the platform redelivers what the dead process held —
handled within a second rather than after the TTL.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from bridge.core.instance import is_dead_here
from bridge.store.relay import SeenStore

log = logging.getLogger(__name__)

CLAIM_TTL = 60.0
"""Seconds a claim holds without its holder marking the key seen or releasing it. Longer
than any handling takes (a hub request gives up after 15 s), so a live holder never loses a
claim; short enough that the redelivery of an event whose holder was killed (kill -9) is
handled within a minute. The cost of a handling that outlasts it anyway: a second instance
may start on the event too, and only the hand-off to the hub stays single (the spool's and
the hub's idempotency on the same key)."""

RETRY_FIRST = 0.05
RETRY_MOST = 1.0
"""How often a refused claim looks again: quickly at first (the holder is usually a moment
from done), then once a second until the claim frees or the key is seen."""


def wall_clock() -> datetime:
    """A claim's TTL is real seconds, like a lease's: memory and SQLite judge it by the wall
    clock, not the relay's clock (which tests hold still, and which dates records)."""
    return datetime.now(UTC)


async def claim_event(seen: SeenStore, key: str, holder: str, ttl: float = CLAIM_TTL) -> bool:
    """Take `key` for `holder`: True when this instance is to handle the event, False when
    it was handled already (by anyone). Waits while someone else holds a live claim."""
    if await seen.claim(key, holder, wall_clock(), ttl):
        return True
    pause = RETRY_FIRST
    while True:
        if await seen.has(key):
            return False
        if await _take_from_the_dead(seen, key, holder, ttl):
            return True
        log.debug("%s is being handled elsewhere; waiting for it to finish or free", key)
        await asyncio.sleep(pause)
        pause = min(pause * 2, RETRY_MOST)
        if await seen.claim(key, holder, wall_clock(), ttl):
            return True


async def _take_from_the_dead(seen: SeenStore, key: str, holder: str, ttl: float) -> bool:
    claimant = await seen.claimant(key)
    if claimant is None or not is_dead_here(claimant, holder):
        return False
    if not await seen.take_over(key, claimant, holder, wall_clock(), ttl):
        return False
    log.info("taking over %s from %s, which is no longer running", key, claimant)
    return True


async def release_quietly(seen: SeenStore, key: str, holder: str) -> None:
    """Give a claim up after the handling failed, so a redelivery is handled at once rather
    than after the TTL. Called while an exception is on its way out: a store that fails here
    too only costs the TTL, and must not hide the error that got us here."""
    try:
        await seen.release(key, holder)
    except Exception as exc:
        log.warning("could not release the claim on %s (it frees in %.0f s): %s",
                    key, CLAIM_TTL, exc)
