"""An account's own records through the one store: the same on memory, SQLite and Redis."""

from __future__ import annotations

from bridge.core.account_state import DONE_AMONG_BATCH, AccountState
from bridge.store import Store


async def test_done_among_names_exactly_the_keys_marked_done_of_this_account(store: Store) -> None:
    mine = AccountState(store, "telegram:main")
    other = AccountState(store, "telegram:other")
    keys = [f"update-relayed:{n}" for n in range(2 * DONE_AMONG_BATCH + 7)]  # several calls
    marked = set(keys[::3]) | {keys[-1]}
    for key in sorted(marked):
        await mine.done(key)
    await other.done(keys[1])  # another account's mark is not this one's

    assert await mine.done_among(keys) == marked
    assert await mine.done_among([]) == set()
    assert await other.done_among(keys[:3]) == {keys[1]}
    assert await mine.done_among(["never-marked"]) == set()
