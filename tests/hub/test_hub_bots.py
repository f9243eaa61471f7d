"""`/ws/bot` over real sockets: handshakes, heartbeats, replacement, persistence, versions."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from hub_clients import TestBot, TestLink, hub_config, next_item

from bridge.bcn import BcnError
from bridge.hub import Hub


async def test_new_bot_gets_token_uuid_and_env(http: aiohttp.ClientSession, hub: Hub) -> None:
    bot = await TestBot.connect(http, hub, name="Helper", protocol_version=3)
    p = bot.payload
    assert p["is_new"] is True
    assert p["token"].startswith("tok-") and p["bot_uuid"].startswith("bot-")
    assert p["env"] == {"BCN_BOT_UUID": p["bot_uuid"], "BCN_BOT_TOKEN": p["token"]}
    assert (p["protocol_version"], p["min_supported_version"]) == (3, 1)
    assert p["name"] == "Helper"
    assert "deprecation" not in p
    assert p["capabilities"] == {"unified_run_events": True, "canonical_session_id": True,
                                 "tool_result_task_intent": False}


@pytest.mark.parametrize("version", [1, 2])
async def test_legacy_versions_negotiate_no_v3_capabilities(
    http: aiohttp.ClientSession, hub: Hub, version: int
) -> None:
    bot = await TestBot.connect(http, hub, name="Helper", protocol_version=version,
                                client_kind="native_mcp")
    assert bot.payload["protocol_version"] == version
    assert bot.payload["capabilities"] == {"unified_run_events": False,
                                           "canonical_session_id": False,
                                           "tool_result_task_intent": False}


async def test_reconnect_with_token_restores_identity(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    first = await TestBot.connect(http, hub, name="Helper")
    await first.close()
    again = await TestBot.connect(http, hub, token=first.token)
    assert again.payload["is_new"] is False
    assert again.uuid == first.uuid and again.payload["name"] == "Helper"
    assert again.payload["token"] == first.token


async def test_unknown_token_is_unauthorized_and_closed(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    bot = await TestBot.open(http, hub)
    with pytest.raises(BcnError) as caught:
        await bot.conn.request("bot.connect", {"token": "tok-nobody", "protocol_version": 3})
    assert caught.value.code == "unauthorized"
    assert await bot.closed_by_hub()


@pytest.mark.parametrize("version", [0, 4])
async def test_version_outside_range_is_refused(
    http: aiohttp.ClientSession, hub: Hub, version: int
) -> None:
    bot = await TestBot.open(http, hub)
    with pytest.raises(BcnError) as caught:
        await bot.conn.request("bot.connect", {"protocol_version": version})
    assert caught.value.code == "unsupported_protocol_version"
    assert await bot.closed_by_hub()


async def test_omitted_version_is_v2_with_configured_deprecation(
    http: aiohttp.ClientSession, start_hub: object
) -> None:
    """The BCN server's compatibility default is v2 (v3 must be asked for explicitly)."""
    notice = {"message": "v2 goes away", "sunset_date": "2027-06-01"}
    hub = await start_hub(deprecations={2: notice})  # type: ignore[operator]
    bot = await TestBot.open(http, hub)
    payload = await bot.conn.request("bot.connect", {})
    assert payload["protocol_version"] == 2
    assert payload["deprecation"] == notice
    assert payload["capabilities"]["unified_run_events"] is False


async def test_first_frame_other_than_connect_is_unauthorized(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    bot = await TestBot.open(http, hub)
    with pytest.raises(BcnError) as caught:
        await bot.conn.request("bot.status", {})
    assert caught.value.code == "unauthorized"
    assert await bot.closed_by_hub()


async def test_garbage_first_frame_is_unauthorized(http: aiohttp.ClientSession, hub: Hub) -> None:
    ws = await http.ws_connect(hub.url + "/ws/bot")
    await ws.send_str("{not json")
    answer = await ws.receive_json(timeout=3)
    assert answer["ok"] is False and answer["error"]["code"] == "unauthorized"
    closing = await ws.receive(timeout=3)
    assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)


async def test_name_of_another_bot_is_refused(http: aiohttp.ClientSession, hub: Hub) -> None:
    await TestBot.connect(http, hub, name="Helper")
    bot = await TestBot.open(http, hub)
    with pytest.raises(BcnError) as caught:
        await bot.conn.request("bot.connect", {"name": "helper", "protocol_version": 3})
    assert caught.value.code == "invalid_request" and "taken" in caught.value.message


async def test_heartbeat_keeps_bot_online_and_silence_expires_it(
    http: aiohttp.ClientSession, start_hub: object
) -> None:
    hub = await start_hub(bot_ttl_seconds=0.3, sweep_interval_seconds=0.05)  # type: ignore[operator]
    bot = await TestBot.connect(http, hub, name="Helper")
    for _ in range(8):  # 0.4 s of heartbeats: longer than the TTL, still online
        assert await bot.conn.request("bot.status", {"status": "busy", "load": 0.5}) == {
            "updated": True}
        await asyncio.sleep(0.05)
    assert hub.health()["bots_online"] == 1
    assert await bot.closed_by_hub()  # silence: expired and closed
    assert hub.health()["bots_online"] == 0


async def test_bot_status_is_checked_and_reported_to_links(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    bot = await TestBot.connect(http, hub, name="Helper")
    with pytest.raises(BcnError) as caught:
        await bot.conn.request("bot.status", {"status": "sleepy"})
    assert caught.value.code == "invalid_request" and "status" in caught.value.message
    with pytest.raises(BcnError):
        await bot.conn.request("bot.status", {"load": "high"})
    await bot.conn.request("bot.status", {"status": "busy", "dynamic_summary": "indexing",
                                          "load": 1})
    link = await TestLink.connect(http, hub)
    listed = await link.conn.request("channel.participants", {"group_id": "grp"})
    helper = next(p for p in listed["participants"] if p["name"] == "Helper")
    assert helper["dynamic_status"]["status"] == "busy"
    assert helper["dynamic_status"]["dynamic_summary"] == "indexing"


async def test_second_live_connection_is_refused_already_connected(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    """The BCN server's rule: the live connection stays; the newcomer gets already_connected."""
    link = await TestLink.connect(http, hub)
    first = await TestBot.connect(http, hub, name="Helper")
    second = await TestBot.open(http, hub)
    with pytest.raises(BcnError) as caught:
        await second.conn.request("bot.connect", {"token": first.token, "protocol_version": 3})
    assert caught.value.code == "already_connected"
    assert await second.closed_by_hub()
    assert hub.health()["bots_online"] == 1
    await link.inbound("hello", "m1")
    send = await next_item(first.sends)  # the first connection still gets the messages
    assert send.params["message"]["content"][0]["text"] == "hello"


async def test_second_connection_replaces_an_old_socket_that_answers_no_ping(
    http: aiohttp.ClientSession, start_hub: object
) -> None:
    hub = await start_hub(probe_timeout_seconds=0.2)  # type: ignore[operator]
    link = await TestLink.connect(http, hub)
    ghost = await http.ws_connect(hub.url + "/ws/bot", autoping=False)
    await ghost.send_json({"type": "req", "id": "c1", "method": "bot.connect",
                           "params": {"name": "Helper", "protocol_version": 3}})
    token = (await ghost.receive_json(timeout=3))["payload"]["token"]
    # The ghost never reads again: like a half-dead TCP connection it cannot answer pings.
    second = await TestBot.connect(http, hub, token=token)
    assert second.payload["is_new"] is False and hub.health()["bots_online"] == 1
    await link.inbound("hello", "m1")
    send = await next_item(second.sends)
    assert send.params["message"]["content"][0]["text"] == "hello"
    await ghost.close()


async def test_bot_id_is_honoured_as_the_server_does(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    chosen = await TestBot.connect(http, hub, name="Helper", bot_id="preset-helper:1")
    assert chosen.uuid == "preset-helper:1" and chosen.payload["is_new"] is True
    await chosen.close()
    again = await TestBot.connect(http, hub, token=chosen.token, bot_id="preset-helper:1")
    assert again.uuid == "preset-helper:1" and again.payload["is_new"] is False
    await again.close()
    for params, code in (
        ({"bot_id": "preset-helper:1"}, "bot_id_conflict"),  # known id, no token
        ({"token": chosen.token, "bot_id": "someone-else"}, "unauthorized"),
        ({"bot_id": "bad id!"}, "invalid_request"),
        ({"token": 5}, "invalid_request"),
    ):
        bot = await TestBot.open(http, hub)
        with pytest.raises(BcnError) as caught:
            await bot.conn.request("bot.connect", {"protocol_version": 3, **params})
        assert caught.value.code == code, params


async def test_registry_survives_restart(http: aiohttp.ClientSession, tmp_path: object) -> None:
    config = hub_config(tmp_path)
    async with Hub(config) as hub:
        bot = await TestBot.connect(http, hub, name="Mantis")
        await bot.close()
    async with Hub(config) as hub:
        again = await TestBot.connect(http, hub, token=bot.token)
        assert again.uuid == bot.uuid and again.payload["is_new"] is False
        members = hub.state.groups.get("grp").members  # type: ignore[union-attr]
        assert bot.uuid in members


async def test_pre_provisioned_bot_keeps_fixed_name(
    http: aiohttp.ClientSession, start_hub: object
) -> None:
    hub = await start_hub(bots=[{"name": "Helper", "token": "helper-token-123"}])  # type: ignore[operator]
    bot = await TestBot.connect(http, hub, token="helper-token-123")
    assert bot.payload["name"] == "Helper" and bot.payload["is_new"] is False
    squatter = await TestBot.open(http, hub)
    with pytest.raises(BcnError):
        await squatter.conn.request("bot.connect", {"name": "Helper"})


async def test_provisioned_token_can_move_to_another_name(
    http: aiohttp.ClientSession, tmp_path: object
) -> None:
    """Renaming a provisioned bot (same token, new name) or swapping two bots' tokens
    in config must not stop the hub from starting; the token follows the config."""
    old = {"name": "Old", "token": "token-first-1"}
    other = {"name": "Other", "token": "token-second-2"}
    async with Hub(hub_config(tmp_path, bots=[old, other])):
        pass
    swapped = [{"name": "Old", "token": "token-second-2"},
               {"name": "Other", "token": "token-first-1"}]
    async with Hub(hub_config(tmp_path, bots=swapped)) as hub:
        bot = await TestBot.connect(http, hub, token="token-first-1")
        assert bot.payload["name"] == "Other"
    renamed = [{"name": "New", "token": "token-first-1"}]
    async with Hub(hub_config(tmp_path, bots=renamed)) as hub:
        bot = await TestBot.connect(http, hub, token="token-first-1")
        assert bot.payload["name"] == "New"
    async with Hub(hub_config(tmp_path, bots=renamed)) as hub:  # and it stays that way
        again = await TestBot.connect(http, hub, token="token-first-1")
        assert again.uuid == bot.uuid


async def test_tokens_are_stored_hashed(http: aiohttp.ClientSession, hub: Hub) -> None:
    bot = await TestBot.connect(http, hub, name="Helper")
    raw = (hub.config.data_dir / "hub.db").read_bytes()
    wal = hub.config.data_dir / "hub.db-wal"
    raw += wal.read_bytes() if wal.exists() else b""
    assert bot.token.encode() not in raw


async def test_unknown_bot_method_is_answered(http: aiohttp.ClientSession, hub: Hub) -> None:
    bot = await TestBot.connect(http, hub, name="Helper")
    with pytest.raises(BcnError) as caught:
        await bot.conn.request("bot.dance", {})
    assert caught.value.code == "unknown_method"
    with pytest.raises(BcnError) as caught:
        await bot.conn.request("bot.connect", {})
    assert caught.value.code == "invalid_request"
