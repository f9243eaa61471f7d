"""Several bridge instances, one bot token: one poller at a time, the others stand by."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from telegram_support import GROUP, TOKEN, Received, account_config

from adapters.telegram import TelegramAdapter
from adapters.telegram.poll_lease import UpdateJournal
from bridge.core.account_state import AccountState
from bridge.store.memory import MemoryStore
from tests.fakes.telegram import FakeTelegram, user

ALICE = user("Alice", user_id=501)


@pytest.fixture
async def shared_store() -> AsyncIterator[MemoryStore]:
    yield MemoryStore()


async def instance(fake: FakeTelegram, store: MemoryStore, name: str,
                   received: Received) -> TelegramAdapter:
    adapter = TelegramAdapter("main", account_config(fake), received)
    adapter.use_state(AccountState(store, adapter.channel, holder=name))
    await adapter.start()
    return adapter


async def test_only_one_instance_polls_and_a_standby_takes_over(
    fake: FakeTelegram, shared_store: MemoryStore
) -> None:
    first_seen, second_seen = Received(), Received()
    first = await instance(fake, shared_store, "instance-a", first_seen)
    second = await instance(fake, shared_store, "instance-b", second_seen)
    try:
        assert first._poll_lease is not None and second._poll_lease is not None
        assert first._poll_lease.polling and not second._poll_lease.polling
        fake.push_message(TOKEN, GROUP, ALICE, "one poller hears this")
        assert (await first_seen.next()).text == "one poller hears this"
        await asyncio.sleep(0.3)  # room for a second poller to show up (none may)
        assert second_seen.empty() and fake.conflicts == 0

        await first.stop()  # an orderly stop hands the lease over at once
        fake.push_message(TOKEN, GROUP, ALICE, "the standby hears this")
        assert (await second_seen.next(timeout=10)).text == "the standby hears this"
        assert second._poll_lease.polling
        assert fake.conflicts == 0
    finally:
        await first.stop()
        await second.stop()


async def test_updates_fetched_but_not_relayed_are_relayed_by_the_next_poller(
    fake: FakeTelegram, shared_store: MemoryStore
) -> None:
    """PTB confirms a batch as soon as it fetched it; the journal keeps it until relayed."""
    state = AccountState(shared_store, "telegram:main", holder="dead-instance")
    fake.push_message(TOKEN, GROUP, ALICE, "fetched, then the poller died")
    [update] = fake._inboxes[TOKEN].updates
    await UpdateJournal(state).keep([update])
    fake._inboxes[TOKEN].updates.clear()  # Telegram considers it confirmed

    seen = Received()
    survivor = await instance(fake, shared_store, "instance-b", seen)
    try:
        assert (await seen.next()).text == "fetched, then the poller died"
        assert await UpdateJournal(state).waiting() == []
    finally:
        await survivor.stop()


class YieldingRecords:
    """A store's records where every read and write lets other tasks run, as they do on
    SQLite or Redis (the memory store never yields, which hides interleavings)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def get(self, key: str) -> Any:
        await asyncio.sleep(0)
        return await self.inner.get(key)

    async def put(self, key: str, value: dict[str, Any], now: Any) -> None:
        await asyncio.sleep(0)
        await self.inner.put(key, value, now)


def fetched(update_id: int) -> dict[str, Any]:
    return {"update_id": update_id, "message": {"message_id": update_id, "text": "hi"}}


async def test_crossing_one_update_off_while_the_next_batch_is_kept_loses_neither() -> None:
    """The poll keeps batch n while the handler crosses off n - 1: both happen, whatever
    the interleaving (a cross-off that rewrote the list dropped batch n from it, and a kill
    -9 then lost that message)."""
    store = MemoryStore()
    store.message_map = YieldingRecords(store.message_map)
    journal = UpdateJournal(AccountState(store, "telegram:main"))
    await journal.keep([fetched(0)])
    for n in range(1, 20):
        await asyncio.gather(journal.keep([fetched(n)]), journal.done(n - 1))
        assert [u["update_id"] for u in await journal.waiting()] == [n]
    for n in range(20, 30):  # and the other way round
        await asyncio.gather(journal.done(n - 1), journal.keep([fetched(n)]))
        assert [u["update_id"] for u in await journal.waiting()] == [n]


async def test_a_fetched_batch_is_in_the_journal_before_it_is_relayed(
    fake: FakeTelegram, shared_store: MemoryStore
) -> None:
    release = asyncio.Event()
    journal_during_relay: list[list[dict]] = []

    async def slow_sink(inbound) -> None:
        journal_during_relay.append(await UpdateJournal(adapter.state).waiting())
        await release.wait()

    adapter = TelegramAdapter("main", account_config(fake), slow_sink)
    adapter.use_state(AccountState(shared_store, adapter.channel, holder="instance-a"))
    await adapter.start()
    try:
        fake.push_message(TOKEN, GROUP, ALICE, "kept while relayed")
        async with asyncio.timeout(10):
            while not journal_during_relay:
                await asyncio.sleep(0.01)
        [[kept]] = journal_during_relay
        assert kept["message"]["text"] == "kept while relayed"
        release.set()
        async with asyncio.timeout(10):
            while await UpdateJournal(adapter.state).waiting():
                await asyncio.sleep(0.01)
    finally:
        release.set()
        await adapter.stop()
