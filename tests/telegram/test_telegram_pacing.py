"""30 replies due at once in one Telegram group: paced under the group's limit, not told to.

The fake Bot API applies Telegram's flood control in groups (`group_limit`: a 429 with
`retry_after` past it), scaled from 20 a minute to 5 a second so the test takes seconds;
the bridge's `send_limits.group` says the same. Everything else is the default: the example
Echo bot streams, so each reply is a post and its edits, and all of them count.
"""

from __future__ import annotations

import time
from collections import Counter

from telegram_support import GROUP, TOKEN, StartSystem

from tests.fakes.telegram import user
from tests.support.running_bridge import WAIT

ADA = user("Ada", user_id=601)
BURST = 30
LIMIT = (5, 1.0)
"""The group's limit, scaled: 5 sends a second (Telegram's is 20 a minute)."""


def send_limits(group: tuple[int, float]) -> dict[str, dict[str, float]]:
    return {"group": {"count": group[0], "seconds": group[1]},
            "chat": {"count": 100, "seconds": 1}, "bot": {"count": 30, "seconds": 1}}


def echoed(texts: list[str]) -> Counter[str]:
    return Counter(body for text in texts
                   if (body := text.partition("\n")[2]).startswith("burst "))


async def burst_answered(start_system: StartSystem, limits: dict) -> tuple[int, float, int]:
    """The burst, until every message shows its one reply: 429s, seconds, sends counted."""
    system = await start_system(send_limits=limits)
    fake = system.fake
    assert fake is not None
    fake.group_limit = LIMIT
    started = time.monotonic()
    for n in range(BURST):
        fake.push_message(TOKEN, GROUP, ADA, f"burst {n:02d}")
    expected = Counter(f"burst {n:02d}" for n in range(BURST))
    await fake.wait_until(lambda: echoed(fake.bot_texts(GROUP)) == expected, WAIT * 12)
    took = time.monotonic() - started
    sends = len([c for c in fake.calls if c.method in ("sendMessage", "editMessageText")])
    return fake.flood_refusals, took, sends


async def test_a_burst_into_a_group_is_paced_under_its_limit(start_system: StartSystem) -> None:
    refusals, took, sends = await burst_answered(start_system, send_limits(LIMIT))
    floor = (sends - refusals - LIMIT[0]) / LIMIT[0] * LIMIT[1]
    print(f"\npaced: {BURST} replies, {sends} posts and edits, {refusals} answered 429, "
          f"all shown after {took:.1f} s (the limit itself allows no less than {floor:.1f} s: "
          f"{took / max(floor, 0.1):.2f}x)")
    assert refusals <= 1


async def test_without_pacing_the_same_burst_is_told_to_wait(start_system: StartSystem) -> None:
    """The contrast that shows the check above can fail: unpaced, the group's flood control
    answers 429 again and again (the outbox still delivers everything, late)."""
    refusals, took, _ = await burst_answered(start_system, send_limits((100_000, 1.0)))
    print(f"\nunpaced: {BURST} replies, {refusals} answered 429, all shown after {took:.1f} s")
    assert refusals > 1
