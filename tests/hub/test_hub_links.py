"""`/ws/channel` over real sockets: auth, bindings, sessions, inbound rules, participants."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from hub_clients import TestBot, TestLink, binding, next_item, nothing_in

from bridge.bcn import BcnError, Connection
from bridge.hub import Hub


async def test_bad_token_is_unauthorized(http: aiohttp.ClientSession, hub: Hub) -> None:
    link = await TestLink.open(http, hub)
    with pytest.raises(BcnError) as caught:
        await link.conn.request("channel.connect", {"token": "wrong", "bindings": []})
    assert caught.value.code == "unauthorized"


async def test_unsupported_link_version(http: aiohttp.ClientSession, hub: Hub) -> None:
    link = await TestLink.open(http, hub)
    with pytest.raises(BcnError) as caught:
        await link.conn.request("channel.connect", {"token": "link-secret-1",
                                                    "protocol_version": 2})
    assert caught.value.code == "unsupported_protocol_version"


async def test_unknown_group_is_invalid_request_naming_it(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    with pytest.raises(BcnError) as caught:
        await TestLink.connect(http, hub, binding(group_id="grp-nope"))
    assert caught.value.code == "invalid_request" and "grp-nope" in caught.value.message


async def test_bad_binding_shape_is_invalid_request(http: aiohttp.ClientSession, hub: Hub) -> None:
    with pytest.raises(BcnError) as caught:
        await TestLink.connect(http, hub, binding(channel_type="Web Chat"))
    assert caught.value.code == "invalid_request" and "channel_type" in caught.value.message


async def test_binding_ids_are_stable_and_echoed(http: aiohttp.ClientSession, hub: Hub) -> None:
    one = await TestLink.connect(http, hub, binding("a"), binding("b", session_scope="sender"))
    two = await TestLink.connect(http, hub, binding("a"))
    echoed = one.payload["bindings"]
    assert [b["conversation_id"] for b in echoed] == ["a", "b"]
    assert echoed[1]["session_scope"] == "sender"
    assert two.binding_id == echoed[0]["binding_id"] != echoed[1]["binding_id"]
    assert one.payload["pending_deliveries"] == 0 and one.payload["link_id"].startswith("lnk-")


async def test_link_name_replaces_previous_link(http: aiohttp.ClientSession, hub: Hub) -> None:
    old = await TestLink.connect(http, hub, link_name="bridge-1")
    await TestLink.connect(http, hub, link_name="bridge-1")
    await old.conn.wait_closed()
    assert hub.health()["links"] == 1


async def test_session_created_reused_and_reset(http: aiohttp.ClientSession, hub: Hub) -> None:
    link = await TestLink.connect(http, hub)
    first = await link.inbound("one", "m1")
    assert first["is_new_session"] is True
    assert first["bcs_session_id"].startswith("grp:channel_webchat_")
    assert len(first["bcs_session_id"].rsplit("_", 1)[1]) == 8
    second = await link.inbound("two", "m2")
    assert second["bcs_session_id"] == first["bcs_session_id"]
    assert second["is_new_session"] is False
    reset = await link.conn.request("channel.session.reset", {"binding_id": link.binding_id})
    assert reset["old_session_id"] == first["bcs_session_id"]
    third = await link.inbound("three", "m3")
    assert third["is_new_session"] is True
    assert third["bcs_session_id"] != first["bcs_session_id"]
    await link.conn.request("channel.session.reset", {"binding_id": link.binding_id})
    again = await link.conn.request("channel.session.reset", {"binding_id": link.binding_id})
    assert again == {"old_session_id": None}
    with pytest.raises(BcnError) as caught:
        await link.conn.request("channel.session.reset", {"binding_id": "bnd_none"})
    assert caught.value.code == "not_found"


async def test_inbound_for_unknown_binding_is_not_found(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    link = await TestLink.connect(http, hub)
    with pytest.raises(BcnError) as caught:
        await link.conn.request("channel.inbound", {"binding_id": "bnd_x", "text": "hi"})
    assert caught.value.code == "not_found"


async def test_scope_sender_and_thread(http: aiohttp.ClientSession, hub: Hub) -> None:
    link = await TestLink.connect(http, hub, binding("a", session_scope="sender"),
                                  binding("b", session_scope="thread"))
    by_sender, by_thread = (b["binding_id"] for b in link.payload["bindings"])
    alice = await link.inbound("hi", "s1", binding_id=by_sender)
    bob = await link.inbound("hi", "s2", binding_id=by_sender,
                             sender={"user_id": "u-bob", "name": "bob"})
    alice2 = await link.inbound("again", "s3", binding_id=by_sender)
    assert alice["bcs_session_id"] != bob["bcs_session_id"]
    assert alice2["bcs_session_id"] == alice["bcs_session_id"]
    reset = await link.conn.request("channel.session.reset",
                                    {"binding_id": by_sender, "sender_user_id": "u-bob"})
    assert reset["old_session_id"] == bob["bcs_session_id"]

    t1 = await link.inbound("x", "t1", binding_id=by_thread, thread_id="th-1")
    t2 = await link.inbound("y", "t2", binding_id=by_thread, thread_id="th-2")
    t1b = await link.inbound("z", "t3", binding_id=by_thread, thread_id="th-1")
    assert t1["bcs_session_id"] != t2["bcs_session_id"]
    assert t1b["bcs_session_id"] == t1["bcs_session_id"]


async def test_duplicate_msg_id_delivers_nothing_twice(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    bot = await TestBot.connect(http, hub, name="Helper")
    link = await TestLink.connect(http, hub)
    first = await link.inbound("hello", "m-dup")
    await next_item(bot.sends)
    again = await link.inbound("hello", "m-dup")
    assert again["duplicate"] is True and again["deliveries"] == []
    assert again["bcs_session_id"] == first["bcs_session_id"]
    assert await nothing_in(bot.sends)


async def test_default_routing_driver_sends_others_observe(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    mantis = await TestBot.connect(http, hub, name="Mantis")
    link = await TestLink.connect(http, hub)
    result = await link.inbound("what now?", "m1")
    methods = {d["name"]: d["method"] for d in result["deliveries"]}
    assert methods == {"Helper": "chat.send", "Mantis": "chat.inject"}
    await next_item(helper.sends)
    await next_item(mantis.injects)

    result = await link.inbound("@mantis please look", "m2")
    methods = {d["name"]: d["method"] for d in result["deliveries"]}
    assert methods == {"Helper": "chat.inject", "Mantis": "chat.send"}
    send = await next_item(mantis.sends)
    context = send.params["session_context"]
    assert context["you_are_mentioned"] is True and context["mentions"] == ["Mantis"]

    result = await link.inbound("hey @all", "m3")
    assert {d["method"] for d in result["deliveries"]} == {"chat.send"}

    result = await link.inbound("no mention", "m4", routing={
        "responders": [{"type": "bot", "value": mantis.uuid}], "reason": "expert"})
    methods = {d["name"]: d["method"] for d in result["deliveries"]}
    assert methods == {"Helper": "chat.inject", "Mantis": "chat.send"}


async def test_mentions_param_adds_platform_resolved_names(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    await TestBot.connect(http, hub, name="Helper")
    mantis = await TestBot.connect(http, hub, name="Mantis")
    link = await TestLink.connect(http, hub)
    result = await link.inbound("<@U123> look", "m1", mentions=["Mantis"])
    assert [d["name"] for d in result["deliveries"] if d["method"] == "chat.send"] == ["Mantis"]
    await next_item(mantis.sends)


async def test_observe_injects_everyone_and_no_system_notice(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    link = await TestLink.connect(http, hub)
    result = await link.inbound("just saying", "m1", deliver="observe")
    assert [d["method"] for d in result["deliveries"]] == ["chat.inject"]
    await next_item(helper.injects)
    assert await nothing_in(link.delivers)


async def test_no_online_bot_gets_system_output(http: aiohttp.ClientSession, hub: Hub) -> None:
    link = await TestLink.connect(http, hub)
    result = await link.inbound("anyone?", "m1")
    assert result["deliveries"] == []
    notice = await next_item(link.delivers)
    assert notice["kind"] == "system" and "no bot is available" in notice["text"].lower()
    assert notice["source_msg_id"] == "m1"
    assert notice["bcs_session_id"] == result["bcs_session_id"]


async def test_identity_forwarding_on_and_off(http: aiohttp.ClientSession, hub: Hub) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    link = await TestLink.connect(http, hub, binding("open", identity_forwarding=True),
                                  binding("private", identity_forwarding=False))
    open_id, private_id = (b["binding_id"] for b in link.payload["bindings"])
    await link.inbound("hi", "m1", binding_id=open_id)
    channel = (await next_item(helper.sends)).params["channel"]
    assert channel["identity_forwarding"] is True
    assert (channel["user_id"], channel["actor_name"]) == ("u-alice", "alice")
    assert channel["source"] == "webchat" and channel["conversation_id"] == "open"

    await link.inbound("hi", "m2", binding_id=private_id)
    hidden = (await next_item(helper.sends)).params
    assert "identity_forwarding" not in hidden["channel"]
    assert "actor_name" not in hidden["channel"]
    assert hidden["channel"]["user_id"].startswith("user-")
    assert "alice" not in str(hidden)
    await link.inbound("again", "m3", binding_id=private_id)
    again = (await next_item(helper.sends)).params
    assert again["channel"]["user_id"] == hidden["channel"]["user_id"]


async def test_participants_and_changed_events(http: aiohttp.ClientSession, hub: Hub) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    link = await TestLink.connect(http, hub)
    listed = await link.conn.request("channel.participants", {"group_id": "grp"})
    assert listed["participants"] == [
        {"bot_uuid": helper.uuid, "name": "Helper", "online": True, "role": "driver"}
    ]
    newcomer = await TestBot.connect(http, hub, name="Newbie")  # auto_join
    event = await next_item(link.events)
    assert event.event == "channel.participants.changed"
    assert event.payload == {"group_id": "grp"}
    await newcomer.close()
    event = await next_item(link.events)
    assert event.payload == {"group_id": "grp"}
    listed = await link.conn.request("channel.participants", {"group_id": "grp"})
    assert {p["name"]: p["online"] for p in listed["participants"]} == {
        "Helper": True, "Newbie": False}
    with pytest.raises(BcnError) as caught:
        await link.conn.request("channel.participants", {"group_id": "nope"})
    assert caught.value.code == "not_found"


async def test_history_keeps_human_messages_and_bot_finals(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    helper.reply = lambda text: f"echo {text}"
    link = await TestLink.connect(http, hub)
    result = await link.inbound("first", "m1")
    await link.deliveries_until_final()
    history = await link.conn.request(
        "channel.history", {"bcs_session_id": result["bcs_session_id"]})
    assert [(m["role"], m["name"], m["text"]) for m in history["messages"]] == [
        ("user", "alice", "first"), ("assistant", "Helper", "echo first")]
    last = await link.conn.request(
        "channel.history", {"bcs_session_id": result["bcs_session_id"], "limit": 1})
    assert [m["text"] for m in last["messages"]] == ["echo first"]
    with pytest.raises(BcnError) as caught:
        await link.conn.request("channel.history", {"bcs_session_id": "grp:nope"})
    assert caught.value.code == "not_found"


async def test_status_heartbeat_and_silent_link_expiry(
    http: aiohttp.ClientSession, start_hub: object
) -> None:
    hub = await start_hub(link_ttl_seconds=0.3, sweep_interval_seconds=0.05)  # type: ignore[operator]
    link = await TestLink.connect(http, hub)
    status = await link.conn.request("channel.status", {})
    assert status == {"bindings_active": 1}
    await link.conn.wait_closed()
    assert hub.health()["links"] == 0


async def test_malformed_frames_are_answered_and_link_stays(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    link = await TestLink.connect(http, hub)
    await link.ws.send_str("not json at all")
    await link.ws.send_str('{"type": "req", "id": "x1", "method": "channel.status", "params": 3}')
    await link.ws.send_str('{"type": "req", "id": "x2", "method": "channel.fly", "params": {}}')
    # The Connection's read loop owns the socket; ask through it to see it is still up.
    assert await link.conn.request("channel.status", {}) == {"bindings_active": 1}
    with pytest.raises(BcnError) as caught:
        await link.conn.request("channel.inbound", {"binding_id": link.binding_id, "text": 5})
    assert caught.value.code == "invalid_request"
    with pytest.raises(BcnError) as caught:
        await link.inbound("x", "m1", routing={"responders": "Helper"})
    assert caught.value.code == "invalid_request" and "responders" in caught.value.message


async def test_protocol_info_is_recorded_in_transcript(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    await TestBot.connect(http, hub, name="Helper")
    link = await TestLink.connect(http, hub)
    protocol = {"type": "REQUEST", "request_id": "lotbot-abc", "from": "Lotbot",
                "to": "Helper", "depth": {"current": 1, "max": 5}}
    result = await link.inbound("do it", "m1", protocol=protocol)
    history = await link.conn.request(
        "channel.history", {"bcs_session_id": result["bcs_session_id"]})
    assert history["messages"][0]["protocol"] == protocol


async def test_in_process_link_is_served_like_a_websocket_one(hub: Hub) -> None:
    """`Hub.open_link` (the embedded bridge's link): the same handshake and token check,
    the same requests, and the hub's stop closes it with "going away"."""
    refused = Connection(await hub.open_link())
    reader = asyncio.create_task(refused.run())
    with pytest.raises(BcnError) as caught:
        await refused.request("channel.connect", {"token": "wrong", "bindings": []})
    assert caught.value.code == "unauthorized"
    await asyncio.wait_for(reader, 5)

    conn = Connection(await hub.open_link())
    reader = asyncio.create_task(conn.run())
    payload = await conn.request("channel.connect",
                                 {"token": "link-secret-1", "bindings": [binding()]})
    assert payload["bindings"][0]["binding_id"]
    assert hub.health()["links"] == 1
    assert await conn.request("channel.status", {}) == {"bindings_active": 1}
    await hub.stop()
    await asyncio.wait_for(reader, 5)
    assert conn.close_code == 1001
    with pytest.raises(ConnectionRefusedError):
        await hub.open_link()


async def test_a_bindings_outputs_go_to_one_link_while_it_lives(
    http: aiohttp.ClientSession, hub: Hub
) -> None:
    """Issue 32: one run's deltas and final went to two bridge instances in turn, each
    posting or editing on its own. Now every output of a binding goes to one link, and to
    the next one only when that link is gone."""
    bot = await TestBot.connect(http, hub, name="Helper", protocol_version=3)
    first = await TestLink.connect(http, hub, link_name="bridge-a")
    second = await TestLink.connect(http, hub, link_name="bridge-b")
    for run in ("run-1", "run-2"):
        await first.inbound(f"stream {run}", f"m-{run}")
        await next_item(bot.sends)
        for word in ("alpha ", "beta ", "gamma"):
            await bot.event(run, "delta", word)
        await bot.final(run, "alpha beta gamma")
    got = [await next_item(first.delivers) for _ in range(8)]
    assert [(d["run_id"], d["kind"]) for d in got] == [
        (run, kind) for run in ("run-1", "run-2")
        for kind in ("delta", "delta", "delta", "final")]
    assert await nothing_in(second.delivers)
    await first.close()
    await second.inbound("stream run-3", "m-run-3")
    await next_item(bot.sends)
    await bot.event("run-3", "delta", "after ")
    await bot.final("run-3", "after the first link")
    moved = [await next_item(second.delivers) for _ in range(2)]
    assert [(d["run_id"], d["kind"]) for d in moved] == [("run-3", "delta"),
                                                         ("run-3", "final")]
