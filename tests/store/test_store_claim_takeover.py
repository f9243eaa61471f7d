"""A claim held by a process of this host that has ended is taken over at once.

The single bridge restarted after a kill -9: the platform redelivers what the dead process
held (a Matrix transaction, a Slack event), and waiting out the dead claim's TTL would hold
it up to a minute. A live claimant — another process that still runs — is waited for as
before. Real processes: the dead one has run and exited, the live one is sleeping.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime

from bridge.core.claims import claim_event
from bridge.core.instance import instance_name, this_host
from bridge.store import Store

TTL = 600.0


def holder_of(pid: int) -> str:
    return f"bcn-bridge@{this_host()}:{pid}:abcdef"


async def test_the_claim_of_a_process_that_ended_is_taken_at_once(store: Store) -> None:
    ended = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await ended.wait()
    dead = holder_of(ended.pid)
    me = instance_name("bcn-bridge")
    assert await claim_event(store.seen, "txn:1", dead, ttl=TTL)
    # Returns at once; with the old wait it would hang for the whole TTL (the test's timeout).
    assert await claim_event(store.seen, "txn:1", me, ttl=TTL)
    assert await store.seen.claimant("txn:1") == me


async def test_the_claim_of_a_process_that_still_runs_is_waited_for(store: Store) -> None:
    sleeper = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import time; time.sleep(60)")
    try:
        alive = holder_of(sleeper.pid)
        assert await claim_event(store.seen, "txn:2", alive, ttl=TTL)
        waiter = asyncio.create_task(claim_event(store.seen, "txn:2", instance_name("b"), ttl=TTL))
        await asyncio.sleep(0.3)
        assert not waiter.done()  # still waiting: its claimant lives
        await store.seen.add("txn:2", datetime.now(UTC))
        assert await asyncio.wait_for(waiter, 5) is False  # handled by the live one: drop
    finally:
        sleeper.kill()
        await sleeper.wait()
