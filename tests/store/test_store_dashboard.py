"""What the operator's dashboard reads, one contract for every backend: conversations a page
at a time (newest first, filtered, with a cursor) and counted by status."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from bridge.store import Conversation, ConversationPage, HistoryEntry, Store, open_store
from bridge.store.loop_guard import HeldLane
from bridge.store.micros import to_micros
from bridge.store.paging import MAX_LIMIT, decode_cursor, encode_cursor
from bridge.store.pauses import Paused
from bridge.store.redis.store import RedisStore
from bridge.store.relay import OutboxItem
from bridge.store.sqlite import SqliteStore
from bridge.store.sqlite.migrations import MIGRATIONS, migrate
from bridge.tracking import Tracker
from tests.tracking.tracking_messages import request, response

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
ROOM = "webchat:main|room-1|"
OTHER_ROOM = "telegram:main|-100200|"
FINISHED = {"done", "partial", "failed", "timeout", "expired"}
DAY = timedelta(days=1)


def conversation(
    n: int,
    *,
    status: str = "open",
    chat: str | None = ROOM,
    from_: str = "Lotbot",
    to: str = "Weather",
    original_from: str | None = None,
    created_at: datetime | None = None,
    request_id: str | None = None,
) -> Conversation:
    """Conversation number `n`, created `n` seconds after T0 unless told otherwise."""
    created = created_at or T0 + timedelta(seconds=n)
    first = HistoryEntry("REQUEST", from_, to, "open", created, f"task {n}", f"fp-{n}")
    history: tuple[HistoryEntry, ...] = (first,)
    if status != "open":
        history += (HistoryEntry("RESPONSE", to, from_, status, created, "ok", f"fp-{n}-r"),)
    return Conversation(
        request_id=request_id or f"r-{n:04d}",
        type="REQUEST",
        from_=from_,
        to=to,
        status=status,
        created_at=created,
        updated_at=created,
        last_type="REQUEST",
        task=f"task {n}",
        original_from=original_from or from_,
        chat=chat,
        deadline=None if status in FINISHED else created + timedelta(minutes=30),
        history=history,
    )


async def put(store: Store, *conversations: Conversation) -> None:
    for each in conversations:
        await store.conversations.update(each.request_id, lambda _, each=each: each)


def ids(page: ConversationPage) -> list[str]:
    return [item.request_id for item in page.items]


async def every_page(store: Store, limit: int, **filters: object) -> list[list[str]]:
    """Follow the cursors to the end; the ids of each page."""
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = await store.conversations.page(cursor=cursor, limit=limit, **filters)  # type: ignore[arg-type]
        pages.append(ids(page))
        if page.next_cursor is None:
            return pages
        assert len(page.items) == limit  # a page that is not the last is full
        cursor = page.next_cursor
        assert len(pages) < 1000, "the cursors never end"


async def test_an_empty_store_has_one_empty_page_and_no_counts(store: Store) -> None:
    assert await store.conversations.page() == ConversationPage([], None)
    assert await store.conversations.counts() == {}


async def test_newest_first_with_their_history_and_ties_broken_by_request_id(
    store: Store,
) -> None:
    same = T0 + timedelta(hours=1)
    await put(
        store,
        conversation(1, status="done"),
        conversation(3),
        conversation(2, status="failed"),
        conversation(0, created_at=same, request_id="tie-a"),
        conversation(0, created_at=same, request_id="tie-c"),
        conversation(0, created_at=same, request_id="tie-b"),
    )
    page = await store.conversations.page()
    assert ids(page) == ["tie-c", "tie-b", "tie-a", "r-0003", "r-0002", "r-0001"]
    assert page.next_cursor is None
    assert page.items[4] == conversation(2, status="failed")  # every field, history in order
    assert [entry.type for entry in page.items[4].history] == ["REQUEST", "RESPONSE"]


async def test_paging_through_many_visits_each_exactly_once_in_order(store: Store) -> None:
    # 130 conversations, several created in the same microsecond, inserted out of order.
    every = [conversation(n, status="done" if n % 3 else "open") for n in range(120)]
    every += [conversation(0, created_at=T0 + timedelta(seconds=50), request_id=f"same-{n}")
              for n in range(10)]  # fmt: skip
    for each in every[::2] + every[1::2]:
        await put(store, each)
    expected = [c.request_id for c in sorted(
        every, key=lambda c: (c.created_at, c.request_id), reverse=True)]  # fmt: skip
    pages = await every_page(store, limit=7)
    assert [request_id for page in pages for request_id in page] == expected
    assert len(pages) == 19 and len(pages[-1]) == 130 - 18 * 7
    # A limit that divides the total: the last full page already says there is no more.
    assert len(await every_page(store, limit=13)) == 10


async def test_the_cursor_is_stable_when_newer_conversations_arrive_between_pages(
    store: Store,
) -> None:
    await put(store, *(conversation(n) for n in range(20)))
    first = await store.conversations.page(limit=5)
    assert ids(first) == [f"r-{n:04d}" for n in range(19, 14, -1)]
    # Newer ones arrive, one in the very microsecond of the cursor's conversation (it is
    # newer by its request id, so it belongs before the cursor too).
    await put(store, *(conversation(n) for n in range(100, 110)))
    await put(store, conversation(15, request_id="r-0015-z"))
    seen = list(ids(first))
    cursor = first.next_cursor
    while cursor is not None:
        page = await store.conversations.page(cursor=cursor, limit=5)
        seen += ids(page)
        cursor = page.next_cursor
        await put(store, conversation(200 + len(seen)))  # and more while paging
    assert seen == [f"r-{n:04d}" for n in range(19, -1, -1)]


async def test_each_filter_and_their_combination(store: Store) -> None:
    await put(
        store,
        conversation(1, status="open", chat=ROOM, from_="Lotbot", to="Weather"),
        conversation(2, status="done", chat=ROOM, from_="Weather", to="Maps",
                     original_from="Lotbot"),
        conversation(3, status="clarifying", chat=OTHER_ROOM, from_="Human", to="Maps"),
        conversation(4, status="done", chat=None, from_="Cron", to="Weather"),
        conversation(5, status="failed", chat=OTHER_ROOM, from_="LOTBOT", to="Echo"),
    )  # fmt: skip
    page = store.conversations.page
    assert ids(await page(statuses={"done"})) == ["r-0004", "r-0002"]
    assert ids(await page(statuses=["open", "clarifying", "failed"])) == [
        "r-0005", "r-0003", "r-0001"
    ]  # fmt: skip
    assert ids(await page(statuses=())) == []
    assert ids(await page(chat=ROOM)) == ["r-0002", "r-0001"]
    assert ids(await page(chat="webchat:main|room-1")) == []  # the exact lane key only
    # bot: from_, to or original_from, whatever the case
    assert ids(await page(bot="lotbot")) == ["r-0005", "r-0002", "r-0001"]
    assert ids(await page(bot="MAPS")) == ["r-0003", "r-0002"]
    assert ids(await page(bot="weather")) == ["r-0004", "r-0002", "r-0001"]
    assert ids(await page(bot="Nobody")) == []
    # combined with AND
    assert ids(await page(statuses={"done", "open"}, chat=ROOM)) == ["r-0002", "r-0001"]
    assert ids(await page(statuses={"done"}, bot="Lotbot")) == ["r-0002"]
    assert ids(await page(chat=OTHER_ROOM, bot="lotBot")) == ["r-0005"]
    assert ids(await page(statuses={"failed", "done"}, chat=OTHER_ROOM, bot="lotbot")) == [
        "r-0005"
    ]  # fmt: skip
    assert ids(await page(statuses={"open"}, chat=OTHER_ROOM, bot="maps")) == []


async def test_filtered_pages_follow_their_cursors(store: Store) -> None:
    # Matches are sparse and spread among many that do not match.
    every = [
        conversation(n, status="done" if n % 4 else "open", chat=ROOM if n % 3 else OTHER_ROOM,
                     to="Maps" if n % 5 == 0 else "Weather")
        for n in range(140)
    ]  # fmt: skip
    await put(store, *every)
    for filters in (
        {"statuses": {"open"}},
        {"statuses": {"open", "done"}, "chat": OTHER_ROOM},
        {"chat": ROOM},
        {"bot": "maps"},
        {"bot": "maps", "statuses": {"done"}},
        {"bot": "WEATHER", "chat": OTHER_ROOM, "statuses": {"open"}},
    ):
        folded = {k: {v.casefold()} if k == "bot" else v for k, v in filters.items()}
        expected = [
            c.request_id for c in reversed(every)
            if c.status in folded.get("statuses", {c.status})
            and c.chat in ({folded["chat"]} if "chat" in folded else {c.chat})
            and (not folded.get("bot") or folded["bot"] & {c.from_.casefold(), c.to.casefold()})
        ]  # fmt: skip
        pages = await every_page(store, limit=4, **filters)
        assert [request_id for page in pages for request_id in page] == expected, filters


async def test_counts_by_status_under_the_same_filters(store: Store) -> None:
    await put(
        store,
        conversation(1, status="open", chat=ROOM, from_="Lotbot", to="Weather"),
        conversation(2, status="done", chat=ROOM, from_="Weather", to="Maps",
                     original_from="Lotbot"),
        conversation(3, status="done", chat=OTHER_ROOM, from_="Human", to="Maps"),
        conversation(4, status="done", chat=None, from_="Cron", to="Weather"),
        conversation(5, status="failed", chat=OTHER_ROOM, from_="LOTBOT", to="Echo"),
    )  # fmt: skip
    counts = store.conversations.counts

    def positive(found: dict[str, int]) -> dict[str, int]:
        return {status: n for status, n in found.items() if n}

    assert positive(await counts()) == {"open": 1, "done": 3, "failed": 1}
    assert positive(await counts(chat=ROOM)) == {"open": 1, "done": 1}
    assert positive(await counts(bot="lotbot")) == {"open": 1, "done": 1, "failed": 1}
    assert positive(await counts(bot="Maps")) == {"done": 2}
    assert positive(await counts(chat=OTHER_ROOM, bot="MAPS")) == {"done": 1}
    assert positive(await counts(chat="nowhere")) == {}
    # A status change moves the conversation from one count (and one filter) to the other.
    await put(store, conversation(1, status="timeout", chat=ROOM, from_="Lotbot", to="Weather"))
    assert positive(await counts(chat=ROOM)) == {"done": 1, "timeout": 1}
    assert positive(await counts()) == {"done": 3, "failed": 1, "timeout": 1}
    assert ids(await store.conversations.page(statuses={"open"})) == []
    assert ids(await store.conversations.page(statuses={"timeout"}, bot="LOTBOT")) == ["r-0001"]


async def test_a_handoff_moves_the_conversation_to_its_new_bot(store: Store) -> None:
    await put(store, conversation(1, from_="Lotbot", to="Weather"))
    await put(store, replace(conversation(1, from_="Lotbot", to="Forecast"),
                             history=conversation(1).history * 2))  # fmt: skip
    assert ids(await store.conversations.page(bot="forecast")) == ["r-0001"]
    assert ids(await store.conversations.page(bot="weather")) == []
    assert await store.conversations.counts(bot="Weather") in ({}, {"open": 0})
    assert await store.conversations.counts(bot="forecast") == {"open": 1}


async def test_malformed_cursors_are_refused_with_a_clear_message(store: Store) -> None:
    await put(store, conversation(1))
    # Empty, not base64, no separator ("not-a-cursor", "12345"), no number ("-:X", "x1:a"),
    # not UTF-8, too long.
    for cursor in ("", "%%%", "not a cursor!", "bm90LWEtY3Vyc29y", "MTIzNDU", "LTpY", "eDE6YQ",
                   "__8", "A" * 5000):  # fmt: skip
        with pytest.raises(ValueError, match="malformed cursor"):
            await store.conversations.page(cursor=cursor)
    # A cursor names a place, not a conversation: one for a place nothing holds still works.
    assert ids(await store.conversations.page(cursor=encode_cursor((10**18, "")))) == ["r-0001"]
    assert ids(await store.conversations.page(cursor=encode_cursor((0, "")))) == []


def test_a_cursor_is_opaque_text_for_a_url() -> None:
    cursor = encode_cursor((1_777_000_000_123_456, "webchat:main|room-1|/é"))
    assert cursor.isascii() and all(ch.isalnum() or ch in "-_" for ch in cursor)
    assert decode_cursor(cursor) == (1_777_000_000_123_456, "webchat:main|room-1|/é")


async def test_the_limit_is_between_one_and_five_hundred(store: Store) -> None:
    await put(store, *(conversation(n) for n in range(3)))
    for limit in (0, -1, MAX_LIMIT + 1, True, 2.0):
        with pytest.raises(ValueError, match="limit"):
            await store.conversations.page(limit=limit)  # type: ignore[arg-type]
    assert len((await store.conversations.page(limit=1)).items) == 1
    assert len((await store.conversations.page(limit=MAX_LIMIT)).items) == 3
    with pytest.raises(ValueError, match="statuses"):
        await store.conversations.page(statuses="open")


async def test_remove_finished_keeps_pages_and_counts_consistent(store: Store) -> None:
    await put(store, *(conversation(n, status="done" if n % 2 else "open") for n in range(30)))
    assert await store.conversations.remove_finished(T0 + timedelta(days=1)) == 15
    pages = await every_page(store, limit=4)
    assert [request_id for page in pages for request_id in page] == [
        f"r-{n:04d}" for n in range(28, -1, -2)
    ]  # fmt: skip
    assert ids(await store.conversations.page(statuses={"done"})) == []
    assert ids(await store.conversations.page(chat=ROOM, bot="lotbot", limit=3)) == [
        "r-0028", "r-0026", "r-0024"
    ]  # fmt: skip
    counts = await store.conversations.counts()
    assert {status: n for status, n in counts.items() if n} == {"open": 15}
    assert {s: n for s, n in (await store.conversations.counts(chat=ROOM, bot="Weather")).items()
            if n} == {"open": 15}  # fmt: skip


async def test_conversations_the_tracker_recorded(store: Store) -> None:
    tracker = Tracker(store)
    await tracker.track(request("lotbot-1"), now=T0, chat=ROOM)
    await tracker.track(request("lotbot-2", to="Maps"), now=T0 + timedelta(seconds=1), chat=ROOM)
    await tracker.track(response("lotbot-1"), now=T0 + timedelta(seconds=2), chat=ROOM)
    page = await store.conversations.page(chat=ROOM)
    assert ids(page) == ["lotbot-2", "lotbot-1"]
    assert page.items[1] == await tracker.get("lotbot-1")
    assert await store.conversations.counts(chat=ROOM) == {"done": 1, "open": 1}
    assert ids(await store.conversations.page(bot="weather", statuses={"done"})) == ["lotbot-1"]


# What only SQLite promises: a page is an index range, whatever is stored.


def query_plan(db: sqlite3.Connection, sql: str) -> str:
    return " | ".join(row[-1] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}"))


def vm_steps(db: sqlite3.Connection) -> Callable[[], int]:
    """Count the virtual machine's instructions from now on (in hundreds, then times 100)."""
    counted = [0]

    def tick() -> int:
        counted[0] += 1
        return 0

    db.set_progress_handler(tick, 100)
    return lambda: counted[0] * 100


async def test_a_page_of_ten_thousand_reads_an_index_range_not_every_row(
    tmp_path: Path,
) -> None:
    async with open_store(f"sqlite:///{tmp_path}/big.db") as store:
        assert isinstance(store, SqliteStore)
        for n in range(10_000):
            each = conversation(n, status="done" if n % 7 else "open", chat=f"room-{n % 50}",
                                to=f"Bot{n % 20}")  # fmt: skip
            await store.conversations.update(each.request_id, lambda _, each=each: each)
        db = store._db
        steps = vm_steps(db)
        db.execute("SELECT COUNT(*) FROM conversations WHERE task IS NOT NULL").fetchone()
        every_row = steps()  # what reading each of the 10,000 rows costs
        db.set_progress_handler(None, 0)
        later = encode_cursor((to_micros(T0 + timedelta(seconds=5_000)), "r-5000"))
        for filters, index in (
            ({}, "INDEX conversations_created"),
            ({"cursor": later}, "INDEX conversations_created"),
            ({"statuses": {"open"}}, "INDEX conversations_status_created"),
            ({"statuses": {"open", "done"}}, "INDEX conversations_status_created"),
            ({"chat": "room-3"}, "INDEX conversations_chat_created"),
            ({"chat": "room-3", "statuses": {"done", "failed"}},
             "INDEX conversations_chat_status_created"),
            ({"bot": "bot3"}, "SEARCH b USING PRIMARY KEY"),
            ({"bot": "bot3", "cursor": later}, "SEARCH b USING PRIMARY KEY"),
            ({"bot": "BOT3", "chat": "room-3", "statuses": {"open", "done"}},
             "INDEX conversations_chat_status_created"),
        ):  # fmt: skip
            statements: list[str] = []
            db.set_trace_callback(statements.append)
            steps = vm_steps(db)
            page = await store.conversations.page(limit=50, **filters)  # type: ignore[arg-type]
            page_steps = steps()
            db.set_progress_handler(None, 0)
            db.set_trace_callback(None)
            assert len(page.items) == 50 and page.next_cursor is not None, filters
            assert page_steps * 5 < every_row, (filters, page_steps, every_row)
            listing = next(s for s in statements if "LIMIT 51" in s)
            plan = query_plan(db, listing)
            assert index in plan, (filters, plan)
            # Every read of conversations goes through an index (in page order, or by key).
            assert "SCAN conversations" not in plan.replace(
                "SCAN conversations USING INDEX conversations_created", ""
            ), (filters, plan)
            history = next(s for s in statements if "FROM conversation_history" in s)
            assert history.count("'r-") == 50  # the page's histories, no others
        counted = vm_steps(db)
        assert await store.conversations.counts(chat="room-3") == {"done": 172, "open": 28}
        assert counted() * 5 < every_row
        db.set_progress_handler(None, 0)


async def test_the_bot_index_is_filled_for_conversations_stored_before_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    migrate(db, MIGRATIONS[:8])  # a file from before the dashboard
    db.execute(
        "INSERT INTO conversations (request_id, type, from_name, to_name, status, chat,"
        " created_at, updated_at, last_type, original_from, revision)"
        " VALUES ('old-1', 'REQUEST', 'Straße', 'Weather', 'open', ?, ?, ?, 'REQUEST',"
        " 'Lotbot', 1)",
        (ROOM, to_micros(T0), to_micros(T0)),
    )
    db.close()
    async with open_store(f"sqlite:///{path}") as store:
        for bot in ("STRASSE", "weather", "lotbot"):  # casefolded, as Python folds names
            assert ids(await store.conversations.page(bot=bot)) == ["old-1"], bot
        assert await store.conversations.counts(bot="straße") == {"open": 1}


# What only Redis promises: indexes cleaned with what they index, shared by every instance.


async def test_remove_finished_leaves_no_index_entry_or_count_behind(redis_url: str) -> None:
    async with open_store(redis_url) as store:
        assert isinstance(store, RedisStore)
        await put(store, *(conversation(n, status="done", chat=f"room-{n % 3}",
                                        to=f"Bot{n % 4}") for n in range(12)))  # fmt: skip
        await put(store, conversation(99, chat=ROOM, to="Keeper"))
        assert await store.conversations.remove_finished(T0 + timedelta(days=1)) == 12
        prefix = store.keys.prefix
        left = {key[len(prefix) + 1:] async for key in store.redis.scan_iter(f"{prefix}:*")}
        assert left == {
            "conv:r-0099", "convs:created", "convs:deadline", "convs:by-status:open",
            "convs:by-from:Lotbot", "convs:by-to:Keeper", f"convs:by-chat:{ROOM}",
            "convs:by-bot:lotbot", "convs:by-bot:keeper", "convs:count",
            f"convs:count-chat:{ROOM}", "convs:count-bot:lotbot", "convs:count-bot:keeper",
            f"convs:count-pair:{len(ROOM)}:{ROOM}:lotbot",
            f"convs:count-pair:{len(ROOM)}:{ROOM}:keeper",
        }  # fmt: skip
        assert await store.redis.zcard(store.keys.created) == 1
        assert await store.conversations.counts() == {"open": 1}


async def test_counts_stay_exact_when_two_instances_update_at_once(redis_url: str) -> None:
    async with open_store(redis_url) as first, open_store(redis_url) as second:
        await put(first, *(conversation(n, chat=f"room-{n % 2}") for n in range(20)))

        async def finish(store: Store, n: int) -> None:
            def change(current: Conversation | None) -> Conversation:
                assert current is not None
                done = conversation(n, status="done", chat=current.chat)
                return replace(done, history=(*current.history, done.history[-1]))

            await store.conversations.update(f"r-{n:04d}", change)

        await asyncio.gather(*(finish(store, n) for n in range(0, 20, 2)
                               for store in (first, second)))  # fmt: skip
        assert await second.conversations.counts() == {"done": 10, "open": 10}
        assert await first.conversations.counts(chat="room-0") == {"done": 10}
        assert await first.conversations.counts(chat="room-1", bot="weather") == {"open": 10}
        page = await second.conversations.page(statuses={"done"}, limit=500)
        assert ids(page) == [f"r-{n:04d}" for n in range(18, -1, -2)]
        # Both instances' updates went in, one after the other: none was lost.
        assert all(len(item.history) == 3 for item in page.items)


# Lanes the loop guard paused, with what they hold.

LANE = "webchat:main|room-1|"
LATER_LANE = "telegram:main|-100200|"


def output(text: str, lane: str = LANE) -> OutboxItem:
    return OutboxItem(lane=lane, kind="final", sender_label="Echo", parts=[text], created_at=T0)


async def trip(store: Store, lane: str, limit: int = 2) -> None:
    for n in range(limit + 1):
        await store.loop_guard.bot_spoke(lane, limit=limit, window=60,
                                         now=T0 + timedelta(seconds=n))  # fmt: skip


async def test_held_lanes_before_a_pause_while_paused_and_after_a_human_spoke(
    store: Store,
) -> None:
    guard = store.loop_guard
    assert await guard.held_lanes() == []
    await guard.bot_spoke(LANE, limit=2, window=60, now=T0)  # counted, not paused
    assert await guard.held_lanes() == []
    await trip(store, LANE)
    assert await guard.held_lanes() == [HeldLane(LANE, held=0, held_over=0)]
    for n in range(3):
        assert await guard.hold(LANE, output(f"held {n}"), keep=2, once=f"e{n}", now=T0)
    # Another lane trips through `post` (the relay's one-step path) and sorts before it.
    verdicts = [
        (await guard.post(LATER_LANE, output(f"p{n}", LATER_LANE), limit=1, window=60, keep=5,
                          once=f"p{n}", now=T0 + timedelta(seconds=n)))[0]
        for n in range(3)
    ]  # fmt: skip
    assert verdicts == ["allow", "tripped", "paused"]
    assert await guard.held_lanes() == [
        HeldLane(LATER_LANE, held=2, held_over=0),
        HeldLane(LANE, held=2, held_over=1),
    ]
    released = await guard.human_spoke(LANE)
    assert released is not None and len(released.items) == 2 and released.not_kept == 1
    assert await guard.held_lanes() == [HeldLane(LATER_LANE, held=2, held_over=0)]
    assert await guard.human_spoke(LATER_LANE) is not None
    assert await guard.held_lanes() == []
    await trip(store, LANE)  # pauses again after a release
    assert await guard.held_lanes() == [HeldLane(LANE, held=0, held_over=0)]


async def test_a_paused_lane_that_expired_leaves_the_redis_index(redis_url: str) -> None:
    async with open_store(redis_url) as store:
        assert isinstance(store, RedisStore)
        await trip(store, LANE)
        await trip(store, LATER_LANE)
        await store.redis.delete(store.keys.guard(LANE))  # its TTL ran out: nobody spoke
        assert await store.loop_guard.held_lanes() == [HeldLane(LATER_LANE, 0, 0)]
        assert await store.redis.smembers(store.keys.paused_lanes) == {LATER_LANE}


async def test_sqlite_reads_the_paused_lanes_from_their_own_index(tmp_path: Path) -> None:
    async with open_store(f"sqlite:///{tmp_path}/guard.db") as store:
        assert isinstance(store, SqliteStore)
        for n in range(50):  # lanes the guard counts in, none paused
            await store.loop_guard.bot_spoke(f"calm-{n}", limit=5, window=60, now=T0)
        await trip(store, LANE)
        statements: list[str] = []
        store._db.set_trace_callback(statements.append)
        assert await store.loop_guard.held_lanes() == [HeldLane(LANE, 0, 0)]
        store._db.set_trace_callback(None)
        plan = query_plan(store._db, next(s for s in statements if "FROM loop_guard" in s))
        assert "SCAN g USING INDEX loop_guard_paused" in plan, plan


# Bindings an operator paused.

BINDING = "webchat:main|room-1|"
THREADED = "slack:work|C0123:general|1700000000.000100"


async def test_pause_and_resume_a_binding(store: Store) -> None:
    pauses = store.pauses
    assert await pauses.all() == {}
    assert await pauses.pause(BINDING, "ada", T0)
    # Paused already: the first operator and time stay.
    assert not await pauses.pause(BINDING, "grace", T0 + timedelta(minutes=5))
    assert await pauses.pause(THREADED, "grace", T0 + timedelta(seconds=1, microseconds=7))
    assert await pauses.all() == {
        BINDING: Paused("ada", T0),
        THREADED: Paused("grace", T0 + timedelta(seconds=1, microseconds=7)),
    }
    assert await pauses.resume(BINDING)
    assert not await pauses.resume(BINDING)
    assert not await pauses.resume("never|paused|")
    assert await pauses.all() == {
        THREADED: Paused("grace", T0 + timedelta(seconds=1, microseconds=7))
    }
    assert await pauses.pause(BINDING, "grace", T0 + DAY)  # paused again: the new record
    assert (await pauses.all())[BINDING] == Paused("grace", T0 + DAY)


async def test_a_pause_time_comes_back_in_utc_and_must_say_its_zone(store: Store) -> None:
    paris = timezone(timedelta(hours=2))
    assert await store.pauses.pause(BINDING, "ada", datetime(2026, 5, 1, 11, 0, tzinfo=paris))
    at = (await store.pauses.all())[BINDING].at
    assert at == T0 and at.tzinfo == UTC
    with pytest.raises(ValueError, match="timezone-aware"):
        await store.pauses.pause(THREADED, "ada", datetime(2026, 5, 1, 9, 0))
    assert THREADED not in await store.pauses.all()


async def test_a_sqlite_pause_survives_reopening_the_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/pauses.db"
    async with open_store(url) as store:
        await store.pauses.pause(BINDING, "ada", T0)
        await store.pauses.pause(THREADED, "ada", T0)
        await store.pauses.resume(THREADED)
    async with open_store(url) as store:
        assert await store.pauses.all() == {BINDING: Paused("ada", T0)}
        assert not await store.pauses.pause(BINDING, "grace", T0 + DAY)


async def test_every_redis_instance_sees_the_same_pause_and_a_restart_keeps_it(
    redis_url: str,
) -> None:
    async with open_store(redis_url) as first, open_store(redis_url) as second:
        won = await asyncio.gather(
            first.pauses.pause(BINDING, "ada", T0), second.pauses.pause(BINDING, "grace", T0)
        )
        assert sorted(won) == [False, True]  # one of them paused it
        paused = await first.pauses.all()
        assert paused == await second.pauses.all() and paused[BINDING].by in {"ada", "grace"}
    async with open_store(redis_url) as reopened:
        assert await reopened.pauses.all() == paused
        assert await reopened.pauses.resume(BINDING)
    async with open_store(redis_url) as again:
        assert await again.pauses.all() == {}
