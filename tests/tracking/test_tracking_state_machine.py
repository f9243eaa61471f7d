"""The conversation state machine, through the Tracker, on every store."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest
from tracking_messages import broadcast, clarify, handoff, parsed, request, response

from bridge.store import open_store
from bridge.tracking import ConversationClosed, Tracker, UnknownConversation

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


async def test_request_opens_a_conversation(tracker: Tracker) -> None:
    conversation = await tracker.track(request(), now=T0, chat="discord:42")
    assert conversation.request_id == "lotbot-abc123"
    assert (conversation.type, conversation.last_type) == ("REQUEST", "REQUEST")
    assert (conversation.from_, conversation.to) == ("Lotbot", "Weather")
    assert conversation.status == "open"
    assert conversation.task == "Check the weather in Paris"
    assert conversation.depth == (1, 5)
    assert conversation.original_from == "Lotbot"
    assert conversation.chat == "discord:42"
    assert conversation.created_at == conversation.updated_at == T0
    assert conversation.deadline == T0 + 30 * MINUTE
    [entry] = conversation.history
    assert (entry.type, entry.from_, entry.to, entry.status, entry.at, entry.content) == (
        "REQUEST", "Lotbot", "Weather", "open", T0, "Check the weather in Paris",
    )  # fmt: skip
    assert await tracker.get("lotbot-abc123") == conversation


async def test_clarify_then_answer_by_request_reopens(tracker: Tracker) -> None:
    await tracker.track(request(), now=T0)
    clarifying = await tracker.track(clarify(), now=T0 + MINUTE)
    assert clarifying.status == "clarifying"
    assert clarifying.deadline == T0 + 11 * MINUTE  # CLARIFY: 10 minutes
    assert clarifying.to == "Weather"  # the owner keeps the task while it asks
    answer = request(task="Tomorrow, please", depth=(3, 5))
    reopened = await tracker.track(answer, now=T0 + 2 * MINUTE)
    assert reopened.status == "open"
    assert reopened.depth == (3, 5)
    assert reopened.task == "Check the weather in Paris"  # the opening task stays
    assert reopened.deadline == T0 + 32 * MINUTE
    assert [entry.type for entry in reopened.history] == ["REQUEST", "CLARIFY", "REQUEST"]


async def test_answer_helper_reopens_a_clarifying_conversation(tracker: Tracker) -> None:
    await tracker.track(request(), now=T0)
    await tracker.track(clarify(), now=T0 + MINUTE)
    answered = await tracker.answer("lotbot-abc123", "alice", "Tomorrow", now=T0 + 3 * MINUTE)
    assert answered.status == "open"
    assert answered.last_type == "REQUEST"
    assert answered.deadline == T0 + 33 * MINUTE
    last = answered.history[-1]
    assert (last.type, last.from_, last.to, last.content) == (
        "ANSWER", "alice", "Weather", "Tomorrow",
    )  # fmt: skip


async def test_answer_refuses_unknown_and_finished_conversations(tracker: Tracker) -> None:
    with pytest.raises(UnknownConversation, match="nope"):
        await tracker.answer("nope", "alice", "hi", now=T0)
    await tracker.track(request(), now=T0)
    await tracker.track(response(), now=T0 + MINUTE)
    with pytest.raises(ConversationClosed, match="already closed \\(done\\)"):
        await tracker.answer("lotbot-abc123", "alice", "late", now=T0 + 2 * MINUTE)
    assert len((await tracker.get("lotbot-abc123")).history) == 2


@pytest.mark.parametrize(
    ("status", "expected"),
    [("done", "done"), ("partial", "partial"), ("failed", "failed"), (None, "done")],
)
async def test_response_finishes_with_its_status(
    tracker: Tracker, status: str | None, expected: str
) -> None:
    await tracker.track(request(), now=T0)
    finished = await tracker.track(response(status=status), now=T0 + MINUTE)
    assert finished.status == expected
    assert finished.deadline is None
    assert finished.finished
    assert finished.history[-1].content == "18°C, partly cloudy"


@pytest.mark.parametrize(
    ("status", "expected"), [("partial_success", "partial"), ("bogus", "done")]
)
async def test_article_dialect_response_statuses(
    tracker: Tracker, status: str, expected: str
) -> None:
    await tracker.track(request(), now=T0)
    article = parsed(
        "[RESPONSE -> Lotbot]\nFrom: Weather\nRequestId: lotbot-abc123\n"
        f"Status: {status}\nBody: 18°C\nDepth: 2/5"
    )
    assert (await tracker.track(article, now=T0 + MINUTE)).status == expected


async def test_handoff_moves_the_owner_and_stays_open(tracker: Tracker) -> None:
    await tracker.track(request(), now=T0)
    moved = await tracker.track(handoff(), now=T0 + MINUTE)
    assert (moved.from_, moved.to, moved.status) == ("Lotbot", "Forecast", "open")
    assert moved.deadline == T0 + 31 * MINUTE
    assert moved.depth == (2, 5)
    assert await tracker.list(to="Forecast") == [moved]
    assert await tracker.list(to="Weather") == []


async def test_broadcast_expires_at_its_expires_field(tracker: Tracker) -> None:
    expires = (T0 + 2 * MINUTE).isoformat().replace("+00:00", "Z")
    announced = await tracker.track(broadcast(expires=expires), now=T0)
    assert (announced.status, announced.to, announced.task) == (
        "open", "all", "Going offline in 5 minutes",
    )  # fmt: skip
    assert announced.deadline == T0 + 2 * MINUTE
    assert await tracker.sweep(now=T0 + MINUTE) == []
    [expired] = await tracker.sweep(now=T0 + 2 * MINUTE)
    assert expired.status == "expired"
    assert expired.deadline is None
    assert expired.history[-1].type == "EXPIRED"


async def test_broadcast_expires_in_other_offsets_and_naive_means_utc(tracker: Tracker) -> None:
    paris = timezone(timedelta(hours=1))
    first = await tracker.track(
        broadcast("b-1", expires=(T0 + MINUTE).astimezone(paris).isoformat()), now=T0
    )
    second = await tracker.track(broadcast("b-2", expires="2025-03-01T12:03:00"), now=T0)
    assert first.deadline == T0 + MINUTE
    assert second.deadline == T0 + 3 * MINUTE


@pytest.mark.parametrize(
    "expires",
    [
        None,
        "",
        "in five minutes",
        "2025-13-45T99:00",
        # Readable, but out of range once moved to UTC: must not crash the tracker.
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-01:00",
    ],
)
async def test_broadcast_without_readable_expiry_uses_its_timeout(
    tracker: Tracker, expires: str | None
) -> None:
    announced = await tracker.track(broadcast(expires=expires), now=T0)
    assert announced.deadline == T0 + 5 * MINUTE
    [expired] = await tracker.sweep(now=T0 + 5 * MINUTE)
    assert expired.status == "expired"


async def test_sweep_times_out_by_last_message_type(tracker: Tracker) -> None:
    await tracker.track(request("req"), now=T0)
    await tracker.track(request("asked"), now=T0)
    await tracker.track(clarify("asked"), now=T0 + MINUTE)  # due at +11
    await tracker.track(request("answered"), now=T0)
    await tracker.track(response("answered"), now=T0 + MINUTE)
    assert await tracker.sweep(now=T0 + 10 * MINUTE) == []
    [asked] = await tracker.sweep(now=T0 + 11 * MINUTE)
    assert asked.request_id == "asked"
    assert (asked.status, asked.deadline, asked.last_type) == ("timeout", None, "CLARIFY")
    timeout = asked.history[-1]
    assert (timeout.type, timeout.status, timeout.at) == ("TIMEOUT", "timeout", T0 + 11 * MINUTE)
    assert timeout.content == "no answer after CLARIFY"
    [req] = await tracker.sweep(now=T0 + 30 * MINUTE)
    assert req.request_id == "req"
    assert req.history[-1].content == "no response after REQUEST"
    assert await tracker.sweep(now=T0 + 60 * MINUTE) == []  # each closes once
    assert (await tracker.get("answered")).status == "done"


async def test_configured_timeouts_replace_the_defaults() -> None:
    async with open_store("memory://") as store:
        tracker = Tracker(store, timeouts={"CLARIFY": timedelta(seconds=30)})
        await tracker.track(request(), now=T0)
        asked = await tracker.track(clarify(), now=T0)
        assert asked.deadline == T0 + timedelta(seconds=30)
        assert tracker.timeouts["REQUEST"] == 30 * MINUTE


@pytest.mark.parametrize(
    "timeouts",
    [{"RESPONSE": MINUTE}, {"CLARIFY": timedelta(0)}, {"CLARIFY": 600}, {"request": MINUTE}],
)
async def test_bad_timeouts_are_refused(timeouts: dict) -> None:
    async with open_store("memory://") as store:
        with pytest.raises(ValueError, match="timeout for"):
            Tracker(store, timeouts=timeouts)


async def test_stray_reply_creates_a_record_with_its_status(tracker: Tracker) -> None:
    stray = await tracker.track(response("unknown-1", status="partial"), now=T0)
    assert (stray.type, stray.status, stray.deadline) == ("RESPONSE", "partial", None)
    assert (stray.from_, stray.to) == ("Lotbot", "Weather")  # requester, owner
    asking = await tracker.track(clarify("unknown-2"), now=T0)
    assert (asking.status, asking.deadline) == ("clarifying", T0 + 10 * MINUTE)
    passed = await tracker.track(handoff("unknown-3"), now=T0)
    assert (passed.status, passed.to) == ("open", "Forecast")


async def test_retracking_the_identical_message_changes_nothing(tracker: Tracker) -> None:
    first = await tracker.track(request(), now=T0, chat="c1")
    again = await tracker.track(request(), now=T0 + MINUTE, chat="c1")
    assert again == first
    # The same id in another chat is that chat's own conversation (issue 31 §4).
    elsewhere = await tracker.track(request(), now=T0 + MINUTE, chat="c2")
    assert elsewhere.request_id != first.request_id and elsewhere.chat == "c2"
    assert await tracker.get(first.request_id) == first
    await tracker.track(response(), now=T0 + 2 * MINUTE)
    late_echo = await tracker.track(request(), now=T0 + 3 * MINUTE)
    assert late_echo.status == "done"
    assert len(late_echo.history) == 2


async def test_a_different_message_with_a_known_id_appends(tracker: Tracker) -> None:
    await tracker.track(request(), now=T0)
    updated = await tracker.track(request(task="Check the weather in Lyon"), now=T0 + MINUTE)
    assert [entry.content for entry in updated.history] == [
        "Check the weather in Paris", "Check the weather in Lyon",
    ]  # fmt: skip
    assert updated.deadline == T0 + 31 * MINUTE


async def test_late_response_after_timeout_records_the_answer(tracker: Tracker) -> None:
    await tracker.track(request(), now=T0)
    await tracker.sweep(now=T0 + 30 * MINUTE)
    late = await tracker.track(response(), now=T0 + 31 * MINUTE)
    assert late.status == "done"
    assert [entry.type for entry in late.history] == ["REQUEST", "TIMEOUT", "RESPONSE"]


async def test_close_ends_a_conversation_with_a_reason(tracker: Tracker) -> None:
    at_the_limit = parsed(
        "```\n[REQUEST → @Weather]\nFrom: Lotbot\nRequestId: lotbot-abc123\n"
        "Task: Check the weather\nDepth: 5/5\n```"
    )
    assert (await tracker.track(at_the_limit, now=T0)).depth == (5, 5)
    closed = await tracker.close("lotbot-abc123", "failed", "depth limit 5/5", now=T0 + MINUTE)
    assert (closed.status, closed.deadline, closed.last_type) == ("failed", None, "REQUEST")
    entry = closed.history[-1]
    assert (entry.type, entry.from_, entry.to, entry.content) == (
        "CLOSE", "bridge", "Lotbot", "depth limit 5/5",
    )  # fmt: skip
    again = await tracker.close("lotbot-abc123", "failed", "twice", now=T0 + 2 * MINUTE)
    assert again == closed
    assert await tracker.sweep(now=T0 + 90 * MINUTE) == []


async def test_close_after_a_timeout_notice(tracker: Tracker) -> None:
    await tracker.track(request(), now=T0)
    [timed_out] = await tracker.sweep(now=T0 + 30 * MINUTE)
    same = await tracker.close("lotbot-abc123", "timeout", "notice posted", now=T0 + 31 * MINUTE)
    assert same == timed_out
    failed = await tracker.close("lotbot-abc123", "failed", "told requester", now=T0 + 32 * MINUTE)
    assert failed.status == "failed"


async def test_close_refuses_unknown_ids_and_open_statuses(tracker: Tracker) -> None:
    with pytest.raises(UnknownConversation):
        await tracker.close("nope", "failed", "x", now=T0)
    await tracker.track(request(), now=T0)
    with pytest.raises(ValueError, match="cannot close 'lotbot-abc123' as 'open'"):
        await tracker.close("lotbot-abc123", "open", "x", now=T0)


async def test_list_filters(tracker: Tracker) -> None:
    await tracker.track(request("a", to="Weather"), now=T0, chat="c1")
    await tracker.track(request("b", to="Maps", from_="Human"), now=T0 + MINUTE, chat="c2")
    await tracker.track(request("c"), now=T0 + 2 * MINUTE, chat="c1")
    await tracker.track(clarify("c"), now=T0 + 3 * MINUTE)
    ids = lambda conversations: [c.request_id for c in conversations]  # noqa: E731
    assert ids(await tracker.list()) == ["a", "b", "c"]
    assert ids(await tracker.list(status="open")) == ["a", "b"]
    assert ids(await tracker.list(status={"open", "clarifying"}, chat="c1")) == ["a", "c"]
    assert ids(await tracker.list(from_="Human")) == ["b"]
    assert ids(await tracker.list(to="Weather", chat="c1", status="clarifying")) == ["c"]
    with pytest.raises(ValueError, match="unknown status opne"):
        await tracker.list(status="opne")


async def test_cleanup_removes_only_old_finished_conversations(tracker: Tracker) -> None:
    await tracker.track(request("old-done"), now=T0)
    await tracker.track(response("old-done"), now=T0)
    await tracker.track(request("old-open"), now=T0)
    await tracker.track(request("new-done"), now=T0)
    await tracker.track(response("new-done"), now=T0 + timedelta(days=2))
    removed = await tracker.cleanup(timedelta(days=1), now=T0 + timedelta(days=2))
    assert removed == 1
    assert {c.request_id for c in await tracker.list()} == {"old-open", "new-done"}
    with pytest.raises(ValueError, match="non-negative timedelta"):
        await tracker.cleanup(timedelta(days=-1))


@pytest.mark.parametrize("now", [datetime(2025, 3, 1, 12, 0), "2025-03-01T12:00Z", 1740830400])
async def test_now_must_be_an_aware_datetime(tracker: Tracker, now: object) -> None:
    for call in (
        tracker.track(request(), now=now),
        tracker.sweep(now=now),
        tracker.cleanup(timedelta(1), now=now),
        tracker.close("x", "done", "r", now=now),
        tracker.answer("x", "alice", "hi", now=now),
    ):
        with pytest.raises(ValueError, match="timezone-aware datetime"):
            await call


async def test_other_timezones_are_stored_as_utc(tracker: Tracker) -> None:
    tokyo = T0.astimezone(timezone(timedelta(hours=9)))
    conversation = await tracker.track(request(), now=tokyo)
    assert conversation.created_at == T0
    assert conversation.created_at.utcoffset() == timedelta(0)


async def test_default_now_is_the_current_time(tracker: Tracker) -> None:
    before = datetime.now(UTC)
    conversation = await tracker.track(request())
    assert before <= conversation.created_at <= datetime.now(UTC)


@pytest.mark.parametrize(
    "bad",
    [
        replace(request(), request_id=None),
        replace(request(), request_id="  "),
        replace(request(), type="PING"),
        object(),
    ],
)
async def test_untrackable_messages_are_a_clear_error(tracker: Tracker, bad: object) -> None:
    with pytest.raises(ValueError, match="cannot track"):
        await tracker.track(bad, now=T0)
