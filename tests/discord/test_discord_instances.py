"""Several bridge instances, one bot: one gateway per shard, every instance sends.

Two `DiscordAdapter`s share one store (memory, and a real Redis), each under its own
instance name, against one fake Discord — which, like Discord, lets both open a session on
the same shard and gives each every event: only the gateway lease keeps a message from
being relayed twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import discord
import pytest
from discord import app_commands
from discord_support import Server, account_config, binding, outbound

from adapters.discord import DiscordAdapter, endpoints
from adapters.discord.commands import CommandSync, app_commands_for
from adapters.discord.startup import GatewayConnection, build_client, log_in
from bridge.config.sections import CommandNames
from bridge.core.account_state import AccountState
from bridge.core.adapter import TransientSendError
from bridge.store import Store, open_store
from tests.fakes.discord import FakeDiscord, FakeGuild
from tests.support.received import Received
from tests.support.redis_server import prefixed, server_or_skip

GATEWAY_LEASE = "discord:main:gateway:0/1"
WAIT = 15.0
"""Longer than a standby's retry (2 s) plus a connect: a takeover fits well inside."""


@pytest.fixture(scope="module")
def redis_server() -> Iterator[str]:
    with server_or_skip() as url:
        yield url


@pytest.fixture(params=["memory", "redis"])
async def shared_store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    """One store both instances use, as `store: redis://…` in a shared config."""
    if request.param == "memory":
        async with open_store("memory://") as store:
            yield store
        return
    async with prefixed(request.getfixturevalue("redis_server")) as url, open_store(url) as store:
        yield store


class Instances:
    """Starts adapters as separate bridge instances on one store; stops them all after."""

    def __init__(self, fake: FakeDiscord, store: Store) -> None:
        self.fake = fake
        self.store = store
        self.running: list[DiscordAdapter] = []

    async def start(self, name: str, received: Received, **options: Any) -> DiscordAdapter:
        bindings = options.pop("bindings")
        commands = options.pop("commands", None)
        adapter = DiscordAdapter("main", account_config(self.fake, **options), received)
        adapter.use_state(AccountState(self.store, adapter.channel, holder=name))
        adapter.use_bindings(bindings)
        if commands is not None:
            adapter.use_commands(commands)
        self.running.append(adapter)
        await adapter.start()
        return adapter

    async def pair(self, server: Server) -> tuple[DiscordAdapter, Received, DiscordAdapter,
                                                  Received]:
        """instance-a, started first, runs the gateway; instance-b stands by."""
        seen_a, seen_b = Received(), Received()
        bound = [binding(server.general)]
        a = await self.start("instance-a", seen_a, bindings=bound)
        b = await self.start("instance-b", seen_b, bindings=bound)
        return a, seen_a, b, seen_b

    async def holder(self, lease: str = GATEWAY_LEASE) -> str | None:
        return await self.store.leases.holder(lease)

    async def stop_all(self) -> None:
        for adapter in self.running:
            await adapter.stop()


@pytest.fixture
async def instances(fake: FakeDiscord, shared_store: Store) -> AsyncIterator[Instances]:
    found = Instances(fake, shared_store)
    yield found
    await found.stop_all()


def shard_names(adapter: DiscordAdapter) -> list[str]:
    return sorted(shard.spec.name for shard in adapter.running_shards())


async def test_one_instance_runs_the_gateway_the_other_only_sends(
    fake, server, instances: Instances
) -> None:
    a, seen_a, b, seen_b = await instances.pair(server)

    assert (shard_names(a), shard_names(b)) == (["0/1"], [])
    assert len(fake.identifies()) == 1 and len(fake.live_sessions((0, 1))) == 1
    assert await instances.holder() == "instance-a"
    first = fake.push_message(server.general, server.ada, "heard by one instance")
    assert (await seen_a.next()).message_id == first["id"]

    ref = await b.send(outbound("posted by the standby", server.general))
    await a.edit(ref, outbound("edited by the gateway holder", server.general))
    after = fake.push_message(server.general, server.ada, "after the reply")

    # a relayed the next human message, not the echo of b's webhook post before it
    assert (await seen_a.next()).message_id == after["id"]
    [reply] = fake.from_bridge(server.general)
    assert (reply.author, reply.content, reply.edits) == (
        "Mantis", "edited by the gateway holder", 1)
    assert reply.webhook_id is not None and len(fake.webhooks) == 1
    assert seen_b.empty() and seen_a.empty()
    assert len(fake.identifies()) == 1  # the standby never opened a gateway


async def test_an_orderly_stop_hands_the_gateway_over_and_the_gap_is_caught_up(
    fake, server, instances: Instances
) -> None:
    a, seen_a, b, seen_b = await instances.pair(server)
    fake.push_message(server.general, server.ada, "before the handover")
    await seen_a.next()

    await a.stop()
    assert await instances.holder() in (None, "instance-b")  # released, not left to expire
    gap = fake.push_message(server.general, server.ada, "while no instance listened")
    await fake.wait_until(lambda: b.running_shards(), WAIT)
    live = fake.push_message(server.general, server.ada, "to the new holder")

    assert [(await seen_b.next(timeout=WAIT)).message_id for _ in range(2)] == [
        gap["id"], live["id"]]
    assert await instances.holder() == "instance-b"
    assert len(fake.live_sessions((0, 1))) == 1
    assert seen_a.empty() and seen_b.empty()


async def test_a_lost_lease_closes_that_gateway_at_once(
    fake, server, instances: Instances
) -> None:
    seen = Received()
    a = await instances.start("instance-a", seen, bindings=[binding(server.general)])
    assert await instances.store.leases.take_over(GATEWAY_LEASE, "instance-a", "intruder", 60)

    await fake.wait_until(lambda: not a.running_shards(), WAIT)  # at its next renewal
    await fake.wait_until(lambda: not fake.live_sessions(), WAIT)
    fake.push_message(server.general, server.ada, "nobody may relay this twice")

    assert await instances.holder() == "intruder"
    await asyncio.sleep(0.3)  # room for a relay that must not happen
    assert seen.empty()


def shard_guild(fake: FakeDiscord, shard: int, name: str) -> FakeGuild:
    """A server on shard `shard` of 2 (Discord: `(guild_id >> 22) % shard_count`)."""
    even_ms = (fake.ids.next() >> 22) // 2 * 2
    return fake.add_guild(name, guild_id=(even_ms + shard + 2 * len(fake.guilds)) << 22)


async def test_static_shard_ids_compete_only_for_their_own_shards(
    fake, instances: Instances
) -> None:
    guilds = [shard_guild(fake, shard, f"Shard {shard}") for shard in (0, 1)]
    channels = [fake.add_channel(guild, "general") for guild in guilds]
    people = [fake.add_member(guild, "ada") for guild in guilds]
    bound = [binding(channel) for channel in channels]
    leased, static = Received(), Received()
    everywhere = await instances.start("instance-leased", leased, bindings=bound, shard_count=2,
                                       identify_interval=0)
    only_one = await instances.start("instance-static", static, bindings=bound, shard_count=2,
                                     shard_ids=[1])
    assert (shard_names(everywhere), shard_names(only_one)) == (["0/2", "1/2"], [])
    for guild, channel, person in zip(guilds, channels, people, strict=True):
        fake.push_message(channel, person, f"first in {guild.name}")
    assert sorted([(await leased.next()).text for _ in guilds]) == [
        "first in Shard 0", "first in Shard 1"]

    await everywhere.stop()
    await fake.wait_until(lambda: only_one.running_shards(), WAIT)
    for guild, channel, person in zip(guilds, channels, people, strict=True):
        fake.push_message(channel, person, f"then in {guild.name}")

    assert (await static.next(timeout=WAIT)).text == "then in Shard 1"
    assert shard_names(only_one) == ["1/2"]
    assert await instances.holder("discord:main:gateway:0/2") is None  # never competed for 0
    assert [s.shard for s in fake.live_sessions()] == [(1, 2)]
    assert static.empty()


async def test_a_command_one_instance_took_is_answered_by_the_other(
    fake, server, instances: Instances
) -> None:
    _, seen, standby, _ = await instances.pair(server)
    await fake.wait_until(lambda: fake.commands.get(server.guild.id))

    interaction = fake.push_interaction(server.general, server.ada, "requests")
    inbound = await seen.next()
    await standby.send(outbound("No open requests in this chat.", server.general,
                                sender="bcn-bridge", reply_to=inbound.message_id))

    [answer] = fake.calls_to("followup")
    assert answer.params["token"] == interaction.token
    assert fake.posted[interaction.original].content == "No open requests in this chat."
    assert fake.webhooks == {}  # through the interaction, not the channel


async def test_the_next_holder_does_not_register_the_commands_again(
    fake, server, instances: Instances
) -> None:
    a, _, b, _ = await instances.pair(server)
    await fake.wait_until(lambda: fake.calls_to("put_commands"))

    await a.stop()
    await fake.wait_until(lambda: b.running_shards(), WAIT)
    interaction = fake.push_interaction(server.general, server.ada, "requests")
    await fake.wait_until(lambda: interaction.response is not None)  # b's tree answers it

    assert len(fake.calls_to("put_commands")) == 1


async def test_two_instances_syncing_one_server_at_once_register_once(
    fake, server, shared_store: Store
) -> None:
    """Without the lease both would read "no hash yet" and both PUT."""
    config = account_config(fake)
    endpoints.claim(config.api_base_url, config.gateway_url)
    clients = [build_client(config) for _ in range(2)]
    try:
        syncs = []
        for client, name in zip(clients, ("instance-a", "instance-b"), strict=True):
            await log_in(client, config, "main")
            sync = CommandSync(app_commands.CommandTree(client),
                               AccountState(shared_store, "discord:main", holder=name), "main")
            sync.install(app_commands_for(CommandNames(), _never_invoked), [server.guild.id])
            syncs.append(sync)
        synced = await asyncio.gather(
            *(sync.sync_once(discord.Object(server.guild.id)) for sync in syncs))
    finally:
        for client in clients:
            await client.close()
        endpoints.release()

    assert sorted(synced) == [False, True]
    assert len(fake.calls_to("put_commands")) == 1


async def _never_invoked(*_: object) -> None:
    raise AssertionError("no command runs in this test")


async def test_the_fake_gives_two_sessions_on_one_shard_every_event(fake, server) -> None:
    """As Discord does: the reason a shard's gateway runs under a lease."""
    config = account_config(fake)
    endpoints.claim(config.api_base_url, config.gateway_url)
    seen: list[list[str]] = [[], []]
    connections = []
    try:
        for heard in seen:
            client = build_client(config)

            async def on_message(message: discord.Message, heard: list[str] = heard) -> None:
                heard.append(message.content)

            client.on_message = on_message  # type: ignore[attr-defined]
            connection = GatewayConnection(client, config, "main", lambda failure: None)
            connections.append(connection)
            await connection.open()
        fake.push_message(server.general, server.ada, "one message")
        await fake.wait_until(lambda: all(seen))
    finally:
        for connection in connections:
            await connection.close()
        endpoints.release()

    assert seen == [["one message"], ["one message"]]
    assert [s.shard for s in fake.sessions] == [(0, 1), (0, 1)]


async def test_a_reply_part_that_reached_discord_is_not_posted_again_by_the_next_instance(
    fake, server, instances: Instances
) -> None:
    """The outbox records a part once `send` returns; an instance dying before that (here:
    giving up while Discord still posts) leaves the next instance to send it again."""
    bound = [binding(server.general)]
    dying = await instances.start("instance-a", Received(), bindings=bound, webhook_timeout=0.3)
    next_one = await instances.start("instance-b", Received(), bindings=bound)
    await dying.send(outbound("warm up", server.general))
    fake.stall_next("execute_webhook", 0.6)
    with pytest.raises(TransientSendError):
        await dying.send(outbound("landed unrecorded", server.general, run_id="run-1"))
    [landed] = await fake.wait_until(lambda: [
        post for post in fake.from_bridge(server.general) if post.content == "landed unrecorded"])
    recorded = await dying.send(outbound("recorded by the adapter", server.general,
                                         run_id="run-2"))

    retried = [await next_one.send(outbound(text, server.general, run_id=run))
               for text, run in (("landed unrecorded", "run-1"),
                                 ("recorded by the adapter", "run-2"))]

    assert [ref.message_id for ref in retried] == [str(landed.id), recorded.message_id]
    assert [post.content for post in fake.from_bridge(server.general)] == [
        "warm up", "landed unrecorded", "recorded by the adapter"]
    assert len(fake.calls_to("execute_webhook")) == 3


async def test_a_notice_said_twice_is_posted_twice(fake, server, instances: Instances) -> None:
    """Only a run's parts are unique; a notice without a run may repeat on purpose."""
    adapter = await instances.start("instance-a", Received(), bindings=[binding(server.general)])
    for _ in range(2):
        await adapter.send(outbound("No bot is available.", server.general, sender="bcn-bridge"))

    assert [post.content for post in fake.from_bridge(server.general)] == [
        "No bot is available.", "No bot is available."]
