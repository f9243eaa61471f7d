"""The conversation concern's contract, run against every store implementation."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from bridge.store import Conversation, HistoryEntry, Store

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def record(
    request_id: str,
    *,
    status: str = "open",
    deadline: datetime | None = T0 + timedelta(minutes=30),
    updated_at: datetime = T0,
    from_: str = "Lotbot",
    to: str = "Weather",
    chat: str | None = "discord:123",
) -> Conversation:
    entry = HistoryEntry("REQUEST", from_, to, status, updated_at, "task", "fp-1")
    return Conversation(
        request_id=request_id,
        type="REQUEST",
        from_=from_,
        to=to,
        status=status,
        created_at=updated_at,
        updated_at=updated_at,
        last_type="REQUEST",
        task="check the weather",
        depth=(1, 5),
        original_from=from_,
        chat=chat,
        deadline=deadline,
        history=(entry,),
    )


async def put(store: Store, conversation: Conversation) -> None:
    await store.conversations.update(conversation.request_id, lambda _: conversation)


async def test_update_creates_and_get_reads_back_every_field(store: Store) -> None:
    conversation = record("a-1")
    updated = await store.conversations.update("a-1", lambda current: conversation)
    assert updated.changed
    assert updated.conversation == conversation
    assert await store.conversations.get("a-1") == conversation


async def test_change_sees_current_record_and_appends_history(store: Store) -> None:
    await put(store, record("a-1"))
    seen: list[Conversation | None] = []

    def respond(current: Conversation | None) -> Conversation:
        seen.append(current)
        assert current is not None
        entry = HistoryEntry("RESPONSE", "Weather", "Lotbot", "done", T0, "sunny", "fp-2")
        return replace(current, status="done", deadline=None, history=(*current.history, entry))

    updated = await store.conversations.update("a-1", respond)
    assert seen == [record("a-1")]
    stored = await store.conversations.get("a-1")
    assert stored == updated.conversation
    assert stored is not None
    assert [entry.type for entry in stored.history] == ["REQUEST", "RESPONSE"]
    assert stored.finished


async def test_change_returning_none_writes_nothing(store: Store) -> None:
    await put(store, record("a-1"))
    updated = await store.conversations.update("a-1", lambda current: None)
    assert updated == (record("a-1"), False)
    assert await store.conversations.update("missing", lambda current: None) == (None, False)
    assert await store.conversations.get("missing") is None


async def test_change_that_raises_leaves_the_record_alone(store: Store) -> None:
    await put(store, record("a-1"))

    def explode(current: Conversation | None) -> Conversation:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await store.conversations.update("a-1", explode)
    assert await store.conversations.get("a-1") == record("a-1")


async def test_change_may_not_rename_or_drop_history(store: Store) -> None:
    await put(store, record("a-1"))
    with pytest.raises(ValueError, match="returned 'b-2'"):
        await store.conversations.update("a-1", lambda current: record("b-2"))
    with pytest.raises(ValueError, match="dropped history"):
        await store.conversations.update("a-1", lambda current: replace(record("a-1"), history=()))
    assert await store.conversations.get("a-1") == record("a-1")


async def test_due_lists_deadlines_up_to_now_earliest_first(store: Store) -> None:
    for minutes, request_id in [(30, "late"), (10, "early"), (20, "middle"), (40, "future")]:
        await put(store, record(request_id, deadline=T0 + timedelta(minutes=minutes)))
    await put(store, record("finished", status="done", deadline=None))
    now = T0 + timedelta(minutes=30)
    assert await store.conversations.due(now) == ["early", "middle", "late"]
    assert await store.conversations.due(now, limit=2) == ["early", "middle"]
    # Asking does not consume: the same ones are still due.
    assert await store.conversations.due(now) == ["early", "middle", "late"]
    assert await store.conversations.due(T0) == []


async def test_due_follows_moved_and_cleared_deadlines(store: Store) -> None:
    await put(store, record("moved", deadline=T0 + timedelta(minutes=5)))
    await put(store, record("cleared", deadline=T0 + timedelta(minutes=5)))
    await put(store, record("moved", deadline=T0 + timedelta(minutes=50)))
    await put(store, replace(record("cleared", status="done", deadline=None)))
    assert await store.conversations.due(T0 + timedelta(minutes=10)) == []
    await put(store, record("moved", deadline=T0 + timedelta(minutes=5)))
    assert await store.conversations.due(T0 + timedelta(minutes=10)) == ["moved"]


async def test_find_filters_combine(store: Store) -> None:
    await put(store, record("r1", from_="Lotbot", to="Weather", chat="c1"))
    await put(store, record("r2", from_="Lotbot", to="Maps", chat="c2", updated_at=T0 + DAY))
    await put(store, record("r3", from_="Human", to="Weather", chat="c1", status="done"))
    find = store.conversations.find
    assert [c.request_id for c in await find()] == ["r1", "r3", "r2"]
    assert [c.request_id for c in await find(statuses={"open"})] == ["r1", "r2"]
    assert [c.request_id for c in await find(statuses=["open", "done"], chat="c1")] == ["r1", "r3"]
    assert [c.request_id for c in await find(from_="Lotbot", to="Maps")] == ["r2"]
    assert await find(statuses=()) == []
    found = await find(to="Weather", statuses={"done"})
    assert found == [record("r3", from_="Human", to="Weather", chat="c1", status="done")]


async def test_remove_finished_keeps_waiting_and_recent_ones(store: Store) -> None:
    await put(store, record("old-done", status="done", deadline=None, updated_at=T0))
    await put(store, record("old-open", updated_at=T0))
    await put(store, record("new-done", status="failed", deadline=None, updated_at=T0 + 2 * DAY))
    assert await store.conversations.remove_finished(T0 + DAY) == 1
    assert await store.conversations.get("old-done") is None
    remaining = {c.request_id for c in await store.conversations.find()}
    assert remaining == {"old-open", "new-done"}
    assert await store.conversations.remove_finished(T0 + DAY) == 0


async def test_times_round_trip_to_the_microsecond(store: Store) -> None:
    moment = datetime(2025, 3, 1, 12, 0, 0, 123457, tzinfo=UTC)
    await put(store, record("precise", updated_at=moment, deadline=moment))
    stored = await store.conversations.get("precise")
    assert stored is not None
    assert (stored.created_at, stored.deadline, stored.history[0].at) == (moment,) * 3
    assert await store.conversations.due(moment) == ["precise"]
    assert await store.conversations.due(moment - timedelta(microseconds=1)) == []
