"""The loop guard's state and held outputs: one contract for every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bridge.store import Store
from bridge.store.loop_guard import LaneGuard, guard_turn
from bridge.store.relay import OutboxItem

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
LANE = "t:main|room|"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def output(text: str) -> OutboxItem:
    return OutboxItem(lane=LANE, kind="final", sender_label="Echo", parts=[text], created_at=T0)


def test_the_transition_trips_once_then_stays_paused() -> None:
    state = LaneGuard()
    verdicts = [guard_turn(state, limit=2, window=60, now=t) for t in (0, 1, 2, 3)]
    assert verdicts == ["allow", "allow", "tripped", "paused"]


def test_the_window_slides() -> None:
    state = LaneGuard()
    assert [guard_turn(state, limit=2, window=10, now=t) for t in (0, 5, 11)] == ["allow"] * 3


async def test_a_lane_pauses_and_a_human_releases_what_was_held(store: Store) -> None:
    verdicts = [
        await store.loop_guard.bot_spoke(LANE, limit=2, window=60, now=at(t)) for t in range(4)
    ]
    assert verdicts == ["allow", "allow", "tripped", "paused"]
    assert await store.loop_guard.is_paused(LANE)
    assert not await store.loop_guard.is_paused("other|lane|")
    for n in range(3):
        assert await store.loop_guard.hold(LANE, output(f"held {n}"), keep=2, once=f"e{n}",
                                           now=T0)
    assert not await store.loop_guard.hold(LANE, output("replayed"), keep=2, once="e1", now=T0)

    released = await store.loop_guard.human_spoke(LANE)
    assert released is not None
    assert [item.parts for item in released.items] == [["held 0"], ["held 1"]]
    assert released.not_kept == 1
    queued = await store.outbox.pending()
    assert [(item.id, item.parts) for item in queued] == [
        (item.id, item.parts) for item in released.items
    ]
    assert not await store.loop_guard.is_paused(LANE)
    assert await store.loop_guard.human_spoke(LANE) is None
    assert await store.loop_guard.bot_spoke(LANE, limit=2, window=60, now=at(10)) == "allow"


async def test_a_human_in_a_lane_that_is_not_paused_resets_its_count(store: Store) -> None:
    await store.loop_guard.bot_spoke(LANE, limit=2, window=60, now=at(0))
    await store.loop_guard.bot_spoke(LANE, limit=2, window=60, now=at(1))
    assert await store.loop_guard.human_spoke(LANE) is None
    assert await store.loop_guard.bot_spoke(LANE, limit=2, window=60, now=at(2)) == "allow"


async def test_a_bot_output_is_counted_and_queued_or_held_in_one_step(store: Store) -> None:
    policy = {"limit": 2, "window": 60.0, "keep": 5}
    results = [
        await store.loop_guard.post(LANE, output(f"o{n}"), once=f"evt:{n}", now=at(n), **policy)
        for n in range(4)
    ]
    assert [verdict for verdict, _ in results] == ["allow", "allow", "tripped", "paused"]
    queued = await store.outbox.pending()
    assert [item.id for item in queued] == [results[0][1], results[1][1]]
    assert [item.parts for item in queued] == [["o0"], ["o1"]]
    assert await store.seen.has("evt:3")
    # A replay changes nothing: not counted, not queued, not held again.
    assert await store.loop_guard.post(LANE, output("o1"), once="evt:1", now=at(5),
                                       **policy) == ("seen", None)
    released = await store.loop_guard.human_spoke(LANE)
    assert released is not None
    assert [item.parts for item in released.items] == [["o2"], ["o3"]]


async def test_a_reply_to_a_person_is_not_counted_while_the_guard_counts_nothing(
    store: Store,
) -> None:
    policy = {"limit": 2, "window": 60.0, "keep": 5}
    for n in range(5):  # a person and a bot, taking turns: never paused, nothing written
        verdict, item_id = await store.loop_guard.post(
            LANE, output(f"reply {n}"), once=f"h{n}", now=at(n), answers_human=True, **policy
        )
        assert verdict == "allow" and item_id is not None
        assert await store.loop_guard.human_spoke(LANE) is None
    assert not await store.loop_guard.is_paused(LANE)
    # Once bots talk among themselves the guard counts, replies to people included.
    await store.loop_guard.bot_spoke(LANE, limit=2, window=60, now=at(10))
    await store.loop_guard.bot_spoke(LANE, limit=2, window=60, now=at(11))
    verdict, _ = await store.loop_guard.post(LANE, output("now counted"), once="h9",
                                             now=at(12), answers_human=True, **policy)
    assert verdict == "tripped"


async def test_max_messages_counts_what_docs_config_says(store: Store) -> None:
    """docs/config.md's example: with `max_messages: 4`, after a person's question the bot's
    answer and four more bot messages show, and the next is held."""
    policy = {"limit": 4, "window": 60.0, "keep": 4}
    verdict, _ = await store.loop_guard.post(LANE, output("the answer"), once="a0", now=at(0),
                                             answers_human=True, **policy)
    shown = [verdict]
    for n in range(1, 6):
        verdict, _ = await store.loop_guard.post(LANE, output(f"bot {n}"), once=f"a{n}",
                                                 now=at(n), **policy)
        shown.append(verdict)
    assert shown == ["allow"] * 5 + ["tripped"]


async def test_a_lane_is_quiet_until_a_bot_speaks_or_something_is_queued(store: Store) -> None:
    """`quiet` is what lets a reply to a person be posted at once (see `Outbox.post_now`):
    True while the lane's guard keeps nothing and nothing of the lane is queued, for every
    backend alike."""
    other = "t:main|another room|"
    assert await store.loop_guard.quiet(LANE)
    verdict, item_id = await store.loop_guard.post(
        LANE, output("to a person"), once="h1", now=at(0), answers_human=True, limit=2,
        window=60.0, keep=5)
    assert verdict == "allow" and item_id is not None
    assert not await store.loop_guard.quiet(LANE)  # queued: a reply now would overtake it
    assert await store.loop_guard.quiet(other)
    await store.outbox.complete(item_id)
    assert await store.loop_guard.quiet(LANE)  # such a reply counts nothing in the guard
    await store.loop_guard.bot_spoke(LANE, limit=2, window=60, now=at(1))
    assert not await store.loop_guard.quiet(LANE)
    assert await store.loop_guard.quiet(other)
    await store.loop_guard.human_spoke(LANE)
    assert await store.loop_guard.quiet(LANE)
