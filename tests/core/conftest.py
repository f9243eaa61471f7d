"""Two bridge instances in one test: two `Relay`s sharing one store, as two processes would.

One memory store, or two separate Redis store objects on one real Redis under one key
prefix. Their links are never started: what they hand the hub waits in the spool, which is
in the store, where a doubled handling would show.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack

import pytest

from bridge.core.binding import Binding
from bridge.core.link import LinkSettings
from bridge.core.relay import Relay
from bridge.store import Store, open_store
from bridge.store.redis.store import RedisStore
from tests.e2e.recording_adapter import RecordingAccount, RecordingAdapter
from tests.support.redis_server import drop_prefix, with_prefix
from tests.support.stores import redis_server

__all__ = ["redis_server"]

BINDING = Binding(channel="testchat:main", chat="room", group="demo")


@pytest.fixture(params=["memory", "redis"])
async def two_stores(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Store, Store]]:
    """What each of the two instances opened: one shared memory store, or two Redis clients
    under one prefix."""
    async with AsyncExitStack() as stack:
        if request.param == "memory":
            store = await stack.enter_async_context(open_store("memory://"))
            yield store, store
            return
        url, prefix = with_prefix(request.getfixturevalue("redis_server"))
        first = await stack.enter_async_context(open_store(url))
        second = await stack.enter_async_context(open_store(url))
        try:
            yield first, second
        finally:
            assert isinstance(first, RedisStore)
            await drop_prefix(first.redis, prefix)


@pytest.fixture
def fresh_chats() -> None:
    """The recording adapter's chats are class-wide: start each test with none."""
    RecordingAdapter.instances.clear()
    RecordingAdapter.chats.clear()


@pytest.fixture
async def relays() -> AsyncIterator[list[Relay]]:
    """The instances a test made, stopped after it (their outbox lanes hold leases)."""
    made: list[Relay] = []
    yield made
    for relay in made:
        await relay.outbox.wait_idle()
        await relay.stop()


@pytest.fixture
def instance(relays: list[Relay]) -> Callable[[Store, str], Relay]:
    def make(store: Store, name: str) -> Relay:
        relay = Relay(store=store, bindings=[BINDING], instance=name,
                      link=LinkSettings(url="ws://127.0.0.1:9", token="unused", link_name=name))
        relay.add_adapter(RecordingAdapter("main", RecordingAccount(), relay.accept))
        relays.append(relay)
        return relay

    return make


