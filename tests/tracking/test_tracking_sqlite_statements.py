"""What tracking one message costs the SQLite store, counted in statements (never a clock).

Every statement is a call into SQLite with Python around it, and every index entry an UPDATE
rewrites, even with its old value, is one more page for the commit to write to the WAL: these
counts are what bench/tracking.py's rate rests on (docs/performance.md, *Tracking*). Each
tracked message is still its own transaction, durable when `track` returns (BEGIN IMMEDIATE
... COMMIT, as before).
"""

from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bridge.store import Store, open_store
from bridge.store.sqlite import SqliteStore
from bridge.tracking import Tracker
from tests.tracking.tracking_messages import handoff, request, response

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


async def traced(store: Store, step: Awaitable[object]) -> list[str]:
    """The statements SQLite ran for `step` (a row of an executemany is one statement)."""
    assert isinstance(store, SqliteStore)
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    try:
        await step
    finally:
        store._db.set_trace_callback(None)
    return statements


def kinds(statements: list[str]) -> list[str]:
    """Each statement's verb and table."""
    shown = []
    for statement in statements:
        words = statement.replace("(", " ").split()
        if words[0] in ("BEGIN", "COMMIT"):
            shown.append(" ".join(words[:2]) if words[0] == "BEGIN" else "COMMIT")
        elif words[0] == "SELECT":
            tables = [w for w in words if w.startswith("conversation")]
            shown.append(f"SELECT {'+'.join(dict.fromkeys(tables))}")
        elif words[0] == "UPDATE":
            shown.append(f"UPDATE {words[1]}")
        elif words[0] == "INSERT":
            shown.append(f"INSERT {words[words.index('INTO') + 1]}")
        else:  # DELETE FROM table
            shown.append(f"DELETE {words[2]}")
    return shown


def set_columns(update: str) -> set[str]:
    """The columns an UPDATE statement assigns."""
    assignments = update.split(" SET ", 1)[1].split(" WHERE ", 1)[0]
    return {assignment.split("=")[0].strip() for assignment in assignments.split(", ")}


async def test_a_new_request_is_six_statements_its_bot_names_one_of_them(
    tmp_path: Path,
) -> None:
    async with open_store(f"sqlite:///{tmp_path}/state.db") as store:
        statements = await traced(store, Tracker(store).track(request(), now=T0))
    assert kinds(statements) == [
        "BEGIN IMMEDIATE",
        "SELECT conversations+conversation_history",  # nothing there: a new one
        "INSERT conversations",
        "INSERT conversation_bots",  # Lotbot and Weather, one statement
        "INSERT conversation_history",
        "COMMIT",
    ]  # before: an upsert for the row and one INSERT per bot name, seven


async def test_a_reply_to_a_conversation_not_held_reads_it_in_one_statement(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/state.db"
    async with open_store(url) as store:
        await Tracker(store).track(request(), now=T0)
    async with open_store(url) as store:  # another process, say: it holds nothing yet
        tracker = Tracker(store)
        statements = await traced(store, tracker.track(response(), now=T0 + timedelta(1)))
        answered = await tracker.get("lotbot-abc123")
    assert kinds(statements) == [
        "BEGIN IMMEDIATE",
        "SELECT conversations+conversation_history",  # the row and its history at once
        "UPDATE conversations",
        "INSERT conversation_history",
        "COMMIT",
    ]  # before: the row and its history read apart, and an upsert of every column, six
    assert answered is not None and answered.status == "done"
    assert [entry.type for entry in answered.history] == ["REQUEST", "RESPONSE"]


async def test_a_held_conversation_is_read_by_its_row_alone(tmp_path: Path) -> None:
    async with open_store(f"sqlite:///{tmp_path}/state.db") as store:
        tracker = Tracker(store)
        await tracker.track(request(), now=T0)
        statements = await traced(store, tracker.track(response(), now=T0 + timedelta(1)))
    assert kinds(statements) == [
        "BEGIN IMMEDIATE",
        "SELECT conversations",  # its revision says the copy held is current
        "UPDATE conversations",
        "INSERT conversation_history",
        "COMMIT",
    ]


async def test_an_update_assigns_only_the_columns_it_changes(tmp_path: Path) -> None:
    """The indexes on the others (when it was created, its chat, its requester) are left
    alone, so the commit writes none of their pages."""
    async with open_store(f"sqlite:///{tmp_path}/state.db") as store:
        tracker = Tracker(store)
        await tracker.track(request(), now=T0)
        statements = await traced(store, tracker.track(response(), now=T0 + timedelta(1)))
    [update] = [statement for statement in statements if statement.startswith("UPDATE")]
    assert set_columns(update) == {
        "status", "depth_current", "updated_at", "deadline", "last_type", "revision",
    }  # fmt: skip


async def test_a_handoff_moves_one_bot_row_and_leaves_the_requesters(tmp_path: Path) -> None:
    async with open_store(f"sqlite:///{tmp_path}/state.db") as store:
        assert isinstance(store, SqliteStore)
        tracker = Tracker(store)
        await tracker.track(request(), now=T0)
        statements = await traced(store, tracker.track(handoff(), now=T0 + timedelta(1)))
        bots = store._db.execute("SELECT bot FROM conversation_bots ORDER BY bot").fetchall()
        moved = await store.conversations.page(bot="forecast")
    assert kinds(statements) == [
        "BEGIN IMMEDIATE",
        "SELECT conversations",
        "UPDATE conversations",
        "DELETE conversation_bots",  # weather, no longer its owner
        "INSERT conversation_bots",  # forecast, the new one
        "INSERT conversation_history",
        "COMMIT",
    ]  # before: both bot rows deleted and both inserted again, ten statements in all
    [update] = [statement for statement in statements if statement.startswith("UPDATE")]
    assert set_columns(update) == {
        "to_name", "depth_current", "updated_at", "deadline", "last_type", "revision",
    }  # fmt: skip
    assert bots == [("forecast",), ("lotbot",)]
    assert [conversation.to for conversation in moved.items] == ["Forecast"]
