"""The gateway: starting, clear failures, resuming after drops, shards, the redirect."""

from __future__ import annotations

import logging

import pytest
from discord.gateway import DiscordWebSocket
from discord.http import Route
from discord_support import TOKEN, binding

from adapters.discord import endpoints
from adapters.discord.config import DISCORD_API, DISCORD_GATEWAY
from adapters.discord.errors import DiscordStartError
from bridge.logs import REDACTOR


def discord_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith(("adapters.discord", "discord"))]


async def test_a_privileged_intent_switched_off_is_one_clear_line(
    fake, server, make_adapter, caplog: pytest.LogCaptureFixture
) -> None:
    fake.enable_intent("message_content", False)

    with pytest.raises(DiscordStartError) as caught:
        await make_adapter()

    message = str(caught.value)
    assert "4014" in message and "Message Content Intent" in message
    assert "Server Members" not in message and "discord.com/developers" in message
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert not [r for r in discord_records(caplog) if r.exc_info]


async def test_the_members_intent_is_named_when_it_was_asked_for(
    fake, server, make_adapter
) -> None:
    fake.enable_intent("members", False)

    with pytest.raises(DiscordStartError, match="Message Content Intent and Server Members"):
        await make_adapter(members_intent=True)


async def test_a_rejected_token_is_clear_and_secret_free(fake, server, make_adapter) -> None:
    fake.token = "NzY1NDMyMTA5ODc2NTQzMjEw.XyZaBc.another-secret-token-value-0123456789"

    with pytest.raises(DiscordStartError, match="rejected the bot token") as caught:
        await make_adapter()

    assert TOKEN not in str(caught.value) and caught.value.__cause__ is None
    assert TOKEN not in REDACTOR.redact(f"token {TOKEN}")  # registered with the redactor
    assert fake.identifies() == []  # it never got as far as the gateway


async def test_an_unreachable_discord_is_a_start_error(make_adapter, fake) -> None:
    await fake.stop()

    with pytest.raises(DiscordStartError, match="could not connect to Discord at http://127"):
        await make_adapter()


async def test_an_unreachable_gateway_is_a_start_error(fake, server, make_adapter) -> None:
    wrong = fake.gateway_url + "-nowhere"

    with pytest.raises(DiscordStartError, match=f"could not connect to the gateway at {wrong}"):
        await make_adapter(gateway_url=wrong)


async def test_a_gateway_that_never_gets_ready_times_out(fake, server, make_adapter) -> None:
    fake.answer_identify = False

    with pytest.raises(DiscordStartError, match=r"did not become ready within 0\.3s"):
        await make_adapter(ready_timeout=0.3)


async def test_a_dropped_gateway_resumes_and_nothing_is_missed(
    fake, server, make_adapter, received
) -> None:
    await make_adapter(bindings=[binding(server.general)])
    fake.push_message(server.general, server.ada, "before")
    await received.next()

    await fake.drop_gateway()
    during = fake.push_message(server.general, server.ada, "while the socket was down")
    resumed = await received.next()

    assert resumed.message_id == during["id"]
    [identify] = fake.identifies()
    [resume] = fake.resumes()
    assert resume["session_id"] == fake.sessions[0].id
    # READY named a different resume URL; a configured gateway_url keeps resumes at home.
    assert fake.gateway_paths == ["/gateway", "/gateway"]
    assert identify["token"] == TOKEN


@pytest.mark.slow
async def test_a_session_discord_forgot_is_identified_again_and_caught_up(
    fake, server, make_adapter, received
) -> None:
    await make_adapter(bindings=[binding(server.general)])
    fake.push_message(server.general, server.ada, "before")
    await received.next()

    fake.invalidate_sessions()
    await fake.drop_gateway()
    missed = fake.push_message(server.general, server.ada, "never dispatched to any session")
    caught_up = await received.next(timeout=15)  # discord.py waits 5 s before re-identifying

    assert caught_up.message_id == missed["id"]
    assert len(fake.identifies()) == 2  # INVALID_SESSION, then a fresh IDENTIFY
    assert received.empty()


@pytest.mark.slow
async def test_a_close_the_library_cannot_recover_from_is_logged_in_one_line(
    fake, server, make_adapter, caplog: pytest.LogCaptureFixture
) -> None:
    adapter = await make_adapter(bindings=[binding(server.general)])
    fake.enable_intent("message_content", False)
    fake.invalidate_sessions()

    with caplog.at_level(logging.ERROR, logger="adapters.discord"):
        await fake.drop_gateway()
        await fake.wait_until(lambda: [r for r in caplog.records if "4014" in r.getMessage()],
                              timeout=15)  # discord.py waits 5 s before re-identifying

    [record] = [r for r in caplog.records if "4014" in r.getMessage()]
    assert record.exc_info is None and "until the bridge restarts" in record.getMessage()
    await fake.wait_until(lambda: not adapter.running_shards())
    # Its lease is released (another instance may try), and this one does not try again.
    assert await adapter.state.store.leases.holder("discord:main:gateway:0/1") is None


async def test_shards_connect_separately_and_see_their_own_servers(
    fake, make_adapter, received
) -> None:
    even_ms = (fake.ids.next() >> 22) // 2 * 2
    mine = fake.add_guild("Shard one", guild_id=(even_ms + 1) << 22)  # (id >> 22) % 2 == 1
    other = fake.add_guild("Shard zero", guild_id=even_ms << 22)
    assert [(g.id >> 22) % 2 for g in (mine, other)] == [1, 0]
    channels = {g.id: fake.add_channel(g, "general") for g in (mine, other)}
    ada = fake.add_member(mine, "ada")
    eve = fake.add_member(other, "eve")

    adapter = await make_adapter(shard_ids=[1], shard_count=2,
                                 bindings=[binding(channels[mine.id]), binding(channels[other.id])])
    fake.push_message(channels[other.id], eve, "on the other shard")
    sent = fake.push_message(channels[mine.id], ada, "on my shard")

    assert [frame["shard"] for frame in fake.identifies()] == [[1, 2]]
    assert (await received.next()).message_id == sent["id"]
    [shard] = adapter.running_shards()
    assert [guild.id for guild in shard.client.guilds] == [mine.id]


async def test_two_accounts_must_share_one_pair_of_addresses(
    fake, server, make_adapter
) -> None:
    first = await make_adapter()
    assert Route.BASE == fake.api_url

    with pytest.raises(DiscordStartError, match="same api_base_url and gateway_url"):
        await make_adapter(api_base_url="http://127.0.0.1:1/api/v10")

    await first.stop()
    assert (Route.BASE, str(DiscordWebSocket.DEFAULT_GATEWAY)) == (DISCORD_API,
                                                                    DISCORD_GATEWAY + "/")


def test_the_redirect_pins_resumes_only_for_a_gateway_of_ones_own() -> None:
    original = DiscordWebSocket.__dict__["from_client"]
    endpoints.claim(DISCORD_API, DISCORD_GATEWAY)
    try:
        assert DiscordWebSocket.__dict__["from_client"] is original
    finally:
        endpoints.release()
    endpoints.claim("http://127.0.0.1:9/api/v10", "ws://127.0.0.1:9/gw")
    try:
        assert DiscordWebSocket.__dict__["from_client"] is not original
        assert str(DiscordWebSocket.DEFAULT_GATEWAY) == "ws://127.0.0.1:9/gw"
    finally:
        endpoints.release()
    assert DiscordWebSocket.__dict__["from_client"] is original

