"""What only the SQLite store promises: durability, WAL, migrations, indexed queries."""

import asyncio
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bridge.store import open_store
from bridge.store.records import Conversation, HistoryEntry
from bridge.store.sqlite import SqliteStore
from bridge.store.sqlite.connection import connect, write_step, write_transaction
from bridge.store.sqlite.migrations import (
    MIGRATIONS,
    Migration,
    SchemaTooNew,
    check_numbering,
    migrate,
    schema_version,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def opened(tmp_path: Path) -> Conversation:
    entry = HistoryEntry("REQUEST", "Lotbot", "Weather", "open", T0, "weather?", "fp")
    return Conversation(
        request_id="lotbot-1",
        type="REQUEST",
        from_="Lotbot",
        to="Weather",
        status="open",
        created_at=T0,
        updated_at=T0,
        last_type="REQUEST",
        task="weather?",
        deadline=T0 + timedelta(minutes=30),
        history=(entry,),
    )


async def test_state_survives_close_and_reopen(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/bridge.db"
    conversation = opened(tmp_path)
    async with open_store(url) as store:
        await store.conversations.update("lotbot-1", lambda _: conversation)
    async with open_store(url) as store:
        assert await store.conversations.get("lotbot-1") == conversation
        assert await store.conversations.due(T0 + timedelta(hours=1)) == ["lotbot-1"]


async def test_file_is_in_wal_mode_with_normal_sync(tmp_path: Path) -> None:
    path = tmp_path / "bridge.db"
    async with open_store(f"sqlite:///{path}") as store:
        assert isinstance(store, SqliteStore)
        db = store._db
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    probe = sqlite3.connect(path)
    assert probe.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # persistent
    probe.close()


async def test_migrations_run_once_and_record_their_number(tmp_path: Path) -> None:
    path = tmp_path / "bridge.db"
    for _ in range(2):
        async with open_store(f"sqlite:///{path}"):
            pass
    db = sqlite3.connect(path)
    assert schema_version(db) == len(MIGRATIONS)
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"conversations", "conversation_history"} <= tables
    db.close()


def test_later_migration_applies_on_top_of_an_existing_file(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    assert migrate(db) == len(MIGRATIONS)
    extra = Migration(len(MIGRATIONS) + 1, "seen ids", ("CREATE TABLE seen (id TEXT)",))
    assert migrate(db, (*MIGRATIONS, extra)) == len(MIGRATIONS) + 1
    assert db.execute("SELECT count(*) FROM seen").fetchone() == (0,)
    assert migrate(db, (*MIGRATIONS, extra)) == len(MIGRATIONS) + 1  # not re-applied
    db.close()


def test_failing_migration_rolls_back_entirely(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    broken = Migration(1, "half", ("CREATE TABLE good (id TEXT)", "CREATE TABLE (oops"))
    with pytest.raises(sqlite3.OperationalError):
        migrate(db, (broken,))
    assert schema_version(db) == 0
    assert db.execute("SELECT name FROM sqlite_master WHERE name='good'").fetchone() is None
    db.close()


def test_newer_schema_than_this_code_is_refused(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    with pytest.raises(SchemaTooNew, match="upgrade bcn-bridge"):
        migrate(db)
    db.close()


def test_migrations_are_numbered_one_by_one() -> None:
    check_numbering(MIGRATIONS)
    with pytest.raises(ValueError, match="expected 2"):
        check_numbering((Migration(1, "a", ()), Migration(3, "b", ())))


def query_plan(db: sqlite3.Connection, sql: str, params: tuple[object, ...]) -> str:
    return " | ".join(row[-1] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", params))


async def test_due_cleanup_and_chat_listing_use_their_indexes(tmp_path: Path) -> None:
    """Catch a regression to a full scan by asking SQLite how it runs the store's queries."""
    async with open_store(f"sqlite:///{tmp_path}/bridge.db") as store:
        assert isinstance(store, SqliteStore)
        statements: list[str] = []
        store._db.set_trace_callback(statements.append)
        await store.conversations.due(T0)
        await store.conversations.remove_finished(T0)
        await store.conversations.find(statuses=("open", "clarifying"), chat="discord:1")
        store._db.set_trace_callback(None)
        due_sql = next(s for s in statements if "deadline <=" in s)
        plan = query_plan(store._db, due_sql, ())
        assert "USING INDEX conversations_deadline" in plan, plan
        delete_sql = next(s for s in statements if s.startswith("DELETE FROM conversations"))
        plan = query_plan(store._db, delete_sql, ())
        assert "conversations_finished" in plan, plan
        chat_sql = next(s for s in statements if s.startswith("SELECT") and "chat =" in s)
        plan = query_plan(store._db, chat_sql, ())
        assert "USING INDEX conversations_chat_status_created" in plan, plan


async def test_history_rows_live_in_their_own_table(tmp_path: Path) -> None:
    async with open_store(f"sqlite:///{tmp_path}/bridge.db") as store:
        assert isinstance(store, SqliteStore)
        conversation = opened(tmp_path)
        await store.conversations.update("lotbot-1", lambda _: conversation)
        more = HistoryEntry("RESPONSE", "Weather", "Lotbot", "done", T0, "sunny", "fp2")
        await store.conversations.update(
            "lotbot-1",
            lambda current: replace(current, history=(*current.history, more)),
        )
        rows = store._db.execute(
            "SELECT seq, type FROM conversation_history WHERE request_id = 'lotbot-1'"
        ).fetchall()
        assert rows == [(0, "REQUEST"), (1, "RESPONSE")]


async def test_a_second_connection_never_sees_a_stale_copy(tmp_path: Path) -> None:
    """Each store reuses histories it already holds; a write elsewhere must invalidate that."""
    url = f"sqlite:///{tmp_path}/bridge.db"
    conversation = opened(tmp_path)
    async with open_store(url) as first, open_store(url) as second:
        await first.conversations.update("lotbot-1", lambda _: conversation)
        assert await first.conversations.get("lotbot-1") == conversation
        more = HistoryEntry("RESPONSE", "Weather", "Lotbot", "done", T0, "sunny", "fp2")
        answered = replace(
            conversation, status="done", deadline=None, history=(*conversation.history, more)
        )
        await second.conversations.update("lotbot-1", lambda _: answered)
        assert await first.conversations.get("lotbot-1") == answered

        await second.conversations.remove_finished(T0 + timedelta(days=1))
        assert await first.conversations.get("lotbot-1") is None
        await first.conversations.update("lotbot-1", lambda _: answered)
        await second.conversations.remove_finished(T0 + timedelta(days=1))
        await second.conversations.update("lotbot-1", lambda _: conversation)  # recreated
        assert await first.conversations.get("lotbot-1") == conversation


class _CommitFailsOnce:
    """A connection whose first COMMIT fails the way SQLITE_BUSY or an I/O error does."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.failed = False

    @property
    def in_transaction(self) -> bool:
        return self.db.in_transaction

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql == "COMMIT" and not self.failed:
            self.failed = True
            raise sqlite3.OperationalError("disk I/O error")
        return self.db.execute(sql, *args)


def test_a_failed_commit_is_rolled_back_and_the_connection_stays_usable(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    db.execute("CREATE TABLE t (v INTEGER)")
    flaky = _CommitFailsOnce(db)
    with pytest.raises(sqlite3.OperationalError), write_transaction(flaky):  # type: ignore[arg-type]
        db.execute("INSERT INTO t VALUES (1)")
    assert not db.in_transaction
    with write_transaction(db):
        db.execute("INSERT INTO t VALUES (2)")
    assert db.execute("SELECT v FROM t").fetchall() == [(2,)]
    db.close()


async def test_write_steps_of_one_turn_share_one_commit_and_fail_alone(tmp_path) -> None:
    db = connect(str(tmp_path / "group.db"))
    db.execute("CREATE TABLE t (v INTEGER PRIMARY KEY)")
    statements: list[str] = []
    db.set_trace_callback(statements.append)

    async def step(value: int) -> None:
        async with write_step(db):
            db.execute("INSERT INTO t (v) VALUES (?)", (value,))
            if value == 3:
                raise ValueError("this one step goes wrong")

    results = await asyncio.gather(*(step(v) for v in range(6)), return_exceptions=True)
    assert [type(r).__name__ for r in results] == ["NoneType"] * 3 + ["ValueError"] + [
        "NoneType"] * 2
    assert statements.count("COMMIT") == 1  # six steps, one commit
    assert [row[0] for row in db.execute("SELECT v FROM t ORDER BY v")] == [0, 1, 2, 4, 5]
    # A plain transaction while a group is open commits the group first, never later.
    async def mixed() -> None:
        from bridge.store.sqlite.connection import write_transaction

        first = asyncio.ensure_future(step(10))
        await asyncio.sleep(0)  # the step has run; its commit is due at the end of the turn
        with write_transaction(db):
            db.execute("INSERT INTO t (v) VALUES (11)")
        await first

    await mixed()
    other = connect(str(tmp_path / "group.db"))  # another process would see both
    assert {row[0] for row in other.execute("SELECT v FROM t")} >= {10, 11}
    db.close()
    other.close()


async def test_a_step_that_begins_the_transaction_needs_no_savepoint(tmp_path) -> None:
    """A step alone in its turn (one message at a time) pays no SAVEPOINT; if it fails, the
    rollback of the transaction it began undoes it whole and the next step starts afresh."""
    db = connect(str(tmp_path / "alone.db"))
    db.execute("CREATE TABLE t (v INTEGER PRIMARY KEY)")
    statements: list[str] = []
    db.set_trace_callback(statements.append)

    async def step(*values: int, fail: bool = False) -> None:
        async with write_step(db):
            for value in values:
                db.execute("INSERT INTO t (v) VALUES (?)", (value,))
            if fail:
                raise ValueError("this step goes wrong")

    await step(1, 2)
    assert not any(s.startswith("SAVEPOINT") for s in statements)
    with pytest.raises(ValueError):
        await step(3, 4, fail=True)
    assert not db.in_transaction
    await step(5)
    assert [row[0] for row in db.execute("SELECT v FROM t ORDER BY v")] == [1, 2, 5]
    assert statements.count("COMMIT") == 2 and statements.count("ROLLBACK") == 1
    db.close()


async def test_a_one_statement_step_that_fails_undoes_only_its_statement(tmp_path) -> None:
    """`one_statement` steps write no SAVEPOINT: SQLite undoes a failed statement by itself,
    so the group's other steps — before and after it in the turn — still commit."""
    db = connect(str(tmp_path / "single.db"))
    db.execute("CREATE TABLE t (v INTEGER PRIMARY KEY)")
    db.execute("INSERT INTO t (v) VALUES (7)")
    statements: list[str] = []
    db.set_trace_callback(statements.append)

    async def step(value: int) -> None:
        async with write_step(db, one_statement=True):
            db.execute("INSERT INTO t (v) VALUES (?)", (value,))

    # The failing step first (it begins the group), then in the middle of it. (The timeout
    # turns a group left uncommitted, its steps waiting forever, into a failure.)
    async with asyncio.timeout(30):
        results = await asyncio.gather(step(7), step(1), step(7), step(2),
                                       return_exceptions=True)
    assert [type(r) for r in results] == [sqlite3.IntegrityError, type(None),
                                          sqlite3.IntegrityError, type(None)]
    assert not any(s.startswith(("SAVEPOINT", "ROLLBACK")) for s in statements)
    assert statements.count("COMMIT") == 1
    other = connect(str(tmp_path / "single.db"))
    assert [row[0] for row in other.execute("SELECT v FROM t ORDER BY v")] == [1, 2, 7]
    db.close()
    other.close()
