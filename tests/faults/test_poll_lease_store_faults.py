"""Two Telegram pollers sharing one real Redis, and the store failing under them: never two
`getUpdates` loops at once (the fake Bot API answers a second concurrent one with 409 and
counts it in `conflicts`).

Each instance is a real `TelegramAdapter` (python-telegram-bot over HTTP to the fake) with
a store of its own connected to a real redis-server process on a private port. The faults
are real too: the poller's TCP path to Redis is cut (the standby's is not), and the
redis-server process is killed with SIGKILL and started again from its append-only file.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from adapters.telegram import TelegramAdapter
from adapters.telegram.poll_lease import UpdateJournal
from bridge.core.account_state import AccountState
from bridge.store import Store, open_store
from tests.fakes.telegram import FakeTelegram, user
from tests.support.bridge_process import free_port
from tests.support.received import Received
from tests.support.redis_server import answers
from tests.telegram.telegram_support import BOT_USERNAME, GROUP, TOKEN, account_config

ALICE = user("Alice", user_id=501)
PREFIX = "poll-faults"


class RedisProcess:
    """A redis-server of this test's own, keeping every write in its append-only file (so a
    SIGKILL and a restart keep the leases, as a production Redis with AOF would)."""

    def __init__(self, folder: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("needs redis-server on PATH to kill and restart it")
        self.binary = binary
        self.folder = folder
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        self.process = await asyncio.to_thread(
            subprocess.Popen,
            [self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        )  # fmt: skip
        async with asyncio.timeout(20):
            while not await asyncio.to_thread(answers, self.url):
                await asyncio.sleep(0.05)

    def kill9(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill9()


class Cable:
    """A TCP path to Redis that can be cut: while cut, every connection through it is reset
    and new ones are refused, as for a host whose network to the store went away."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def connect(self) -> None:
        self._server = await asyncio.start_server(self._pipe, "127.0.0.1", self.port)

    async def cut(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}

        async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.IncompleteReadError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.transport.abort()

        await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    server = FakeTelegram()
    server.add_bot(TOKEN, BOT_USERNAME)
    server.add_chat(GROUP, title="Team room")
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisProcess]:
    process = RedisProcess(tmp_path)
    yield process
    process.stop()


class Instance:
    """One bridge instance's Telegram account: its own store connection, its own poller."""

    def __init__(self, name: str, store: Store, fake: FakeTelegram) -> None:
        self.name = name
        self.store = store
        self.received = Received()
        self.adapter = TelegramAdapter("main", account_config(fake), self.received)
        self.adapter.use_state(AccountState(store, self.adapter.channel, holder=name))

    @property
    def polling(self) -> bool:
        lease = self.adapter._poll_lease
        return lease is not None and lease.polling

    @property
    def token(self) -> int | None:
        lease = self.adapter._poll_lease
        return lease.keeper.token if lease is not None else None


@contextlib.asynccontextmanager
async def two_instances(
    fake: FakeTelegram, url_a: str, url_b: str
) -> AsyncIterator[tuple[Instance, Instance, list[tuple[bool, bool]]]]:
    """Instance a (started first: it polls) and b (stands by), and a watch that samples
    who polls every few ms (both at once must never show)."""
    async with open_store(f"{url_a}?prefix={PREFIX}") as store_a, \
            open_store(f"{url_b}?prefix={PREFIX}") as store_b:  # fmt: skip
        a, b = Instance("instance-a", store_a, fake), Instance("instance-b", store_b, fake)
        await a.adapter.start()
        await b.adapter.start()
        samples: list[tuple[bool, bool]] = []

        async def watch() -> None:
            while True:
                samples.append((a.polling, b.polling))
                await asyncio.sleep(0.005)

        watching = asyncio.create_task(watch())
        try:
            assert a.polling and not b.polling
            yield a, b, samples
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching
            await a.adapter.stop()
            await b.adapter.stop()


async def until(condition: object, timeout: float = 60) -> None:
    async with asyncio.timeout(timeout):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.02)


async def test_the_pollers_store_unreachable_stops_it_before_the_standby_polls(
    fake: FakeTelegram, redis: RedisProcess
) -> None:
    await redis.start()
    cable = Cable(redis.port)
    await cable.connect()
    async with two_instances(fake, f"redis://127.0.0.1:{cable.port}/0", redis.url) as (
        a, b, samples
    ):
        fake.push_message(TOKEN, GROUP, ALICE, "before the cut")
        assert (await a.received.next(timeout=20)).text == "before the cut"
        journal = UpdateJournal(b.adapter.state)
        async with asyncio.timeout(20):  # crossed off: b will not replay it
            while await journal.waiting():
                await asyncio.sleep(0.02)

        await cable.cut()  # a can no longer reach Redis; b still can
        await until(lambda: b.polling)
        fake.push_message(TOKEN, GROUP, ALICE, "after the cut")
        assert (await b.received.next(timeout=20)).text == "after the cut"

        assert not a.polling
        assert fake.conflicts == 0  # never a second getUpdates while the first ran
        assert (True, True) not in samples
        # a stopped polling before b began: the last sample of a polling comes first.
        last_a = max(i for i, (polls_a, _) in enumerate(samples) if polls_a)
        first_b = min(i for i, (_, polls_b) in enumerate(samples) if polls_b)
        assert last_a < first_b

        await cable.connect()  # a reaches the store again: b keeps the token, a stands by
        fake.push_message(TOKEN, GROUP, ALICE, "after the repair")
        assert (await b.received.next(timeout=20)).text == "after the repair"
        assert not a.polling and fake.conflicts == 0


async def test_redis_killed_and_restarted_within_the_ttl_keeps_the_poller_polling(
    fake: FakeTelegram, redis: RedisProcess
) -> None:
    await redis.start()
    async with two_instances(fake, redis.url, redis.url) as (a, b, samples):
        token = a.token
        assert token is not None
        keeper = a.adapter._poll_lease.keeper  # type: ignore[union-attr]
        redis.kill9()
        await until(lambda: keeper.outage.is_down)  # a renewal failed: the store is down
        await redis.start()  # from its AOF: the lease is still a's, with its expiry
        await until(lambda: not keeper.outage.is_down)  # a renewed again

        fake.push_message(TOKEN, GROUP, ALICE, "after the restart")
        assert (await a.received.next(timeout=20)).text == "after the restart"
        assert a.polling and not b.polling and a.token == token
        assert fake.conflicts == 0
        assert (True, True) not in samples
        assert all(polls_a for polls_a, _ in samples)  # the outage never stopped the poller
