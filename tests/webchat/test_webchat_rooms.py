"""Joining, history, broadcast and the Inbound each human message becomes — over real sockets."""

from __future__ import annotations

from webchat_clients import drain_until, open_client, wait_for


async def test_hello_tells_the_page_the_limits(connect) -> None:
    client = await connect()
    assert client.hello["title"] == "bcn-bridge webchat"
    assert client.hello["max_message_length"] == 4000
    assert client.hello["default_room"] == "lobby"


async def test_join_answers_with_an_empty_room(connect) -> None:
    client = await connect()
    joined = await client.join("lobby", "Ada")
    assert joined["room"] == "lobby"
    assert joined["name"] == "Ada"
    assert joined["history"] == []
    assert joined["requests"] == []
    assert joined["bound"] is None


async def test_display_names_are_cleaned(connect) -> None:
    client = await connect()
    joined = await client.join("lobby", "  Ada \u202e\n Lovelace\x00 ")
    assert joined["name"] == "Ada Lovelace"


async def test_human_message_reaches_everyone_in_the_room_and_the_sink(connect, webchat) -> None:
    ada, bob = await connect(), await connect()
    await ada.join("lobby", "Ada")
    await bob.join("lobby", "Bob")

    client_message_id = await ada.say("hello @Rules and @Mantis, cc @everyone and a@b.com")

    ack = await ada.expect("ack")  # the sender's one frame: the ack carries the message
    seen_by_bob = await bob.expect("message")
    message = seen_by_bob["message"]
    assert ack == {
        "type": "ack",
        "client_message_id": client_message_id,
        "message_id": message["id"],
        "message": message,
    }
    await ada.assert_quiet()  # and no "message" frame of its own as well
    assert message["kind"] == "human"
    assert message["sender"] == {"name": "Ada", "is_bot": False}
    assert message["text"] == "hello @Rules and @Mantis, cc @everyone and a@b.com"
    assert message["html"] is None
    assert message["client_message_id"] == client_message_id

    inbound = await wait_for(webchat.inbound)
    assert inbound.channel_type == "webchat"
    assert inbound.account == "main"
    assert inbound.channel == "webchat:main"
    assert inbound.chat_id == "lobby"
    assert inbound.message_id == message["id"]
    assert inbound.sender.id == ada.user_id
    assert inbound.sender.name == "Ada"
    assert inbound.sender.is_bot is False
    assert inbound.text == message["text"]
    assert inbound.mentions == ("Rules", "Mantis")
    assert inbound.timestamp.isoformat() == message["timestamp"]


async def test_rooms_do_not_hear_each_other(connect) -> None:
    ada, eve = await connect(), await connect()
    await ada.join("lobby", "Ada")
    await eve.join("kitchen", "Eve")
    await ada.say("only for the lobby")
    await ada.expect("ack")
    await eve.assert_quiet()


async def test_history_is_sent_on_join(connect) -> None:
    ada = await connect()
    await ada.join("lobby", "Ada")
    for text in ("one", "two", "three"):
        await ada.say(text)
        await drain_until(ada, "ack")

    late = await connect()
    joined = await late.join("lobby", "Late")
    assert [message["text"] for message in joined["history"]] == ["one", "two", "three"]


async def test_history_keeps_only_the_last_messages(start_webchat, http) -> None:
    chat = await start_webchat(history=2)
    ada = await open_client(http, chat.ws_url)
    await ada.join("lobby", "Ada")
    for text in ("one", "two", "three"):
        await ada.say(text)
        await drain_until(ada, "ack")
    late = await open_client(http, chat.ws_url)
    joined = await late.join("lobby", "Late")
    assert [message["text"] for message in joined["history"]] == ["two", "three"]


async def test_client_retries_are_posted_once(connect, webchat) -> None:
    ada, bob = await connect(), await connect()
    await ada.join("lobby", "Ada")
    await bob.join("lobby", "Bob")

    await ada.say("only once", client_message_id="m-retry")
    first = (await ada.expect("ack"))["message"]

    await ada.say("only once", client_message_id="m-retry")
    second_ack = await ada.expect("ack")
    assert second_ack["message_id"] == first["id"]

    assert (await bob.expect("message"))["message"]["id"] == first["id"]
    await bob.assert_quiet()
    await ada.assert_quiet()
    assert (await wait_for(webchat.inbound)).message_id == first["id"]
    assert webchat.inbound.empty()


async def test_a_retry_after_reconnecting_is_posted_once(connect, webchat) -> None:
    first_tab = await connect()
    await first_tab.join("lobby", "Ada")
    await first_tab.say("sent before the network dropped", client_message_id="m-1")
    original = (await first_tab.expect("ack"))["message"]
    await first_tab.ws.close()

    reconnected = await connect(first_tab.client_id)
    joined = await reconnected.join("lobby", "Ada")
    assert [message["id"] for message in joined["history"]] == [original["id"]]
    await reconnected.say("sent before the network dropped", client_message_id="m-1")
    assert (await reconnected.expect("ack"))["message_id"] == original["id"]
    await reconnected.assert_quiet()
    await wait_for(webchat.inbound)
    assert webchat.inbound.empty()


async def test_same_message_id_from_another_client_is_a_new_message(connect) -> None:
    ada, bob = await connect(), await connect()
    await ada.join("lobby", "Ada")
    await bob.join("lobby", "Bob")
    await ada.say("hi", client_message_id="m-1")
    from_ada = (await bob.expect("message"))["message"]
    await bob.say("hi", client_message_id="m-1")
    ack = await bob.expect("ack")
    from_bob = ack["message"]
    assert from_bob["sender"]["name"] == "Bob"
    assert ack["message_id"] == from_bob["id"] != from_ada["id"]


async def test_switching_rooms_leaves_the_old_one(connect) -> None:
    ada, bob = await connect(), await connect()
    await ada.join("lobby", "Ada")
    await bob.join("lobby", "Bob")
    await ada.join("kitchen", "Ada")
    await bob.say("anyone here?")
    await bob.expect("ack")
    await ada.assert_quiet()


async def test_human_protocol_blocks_carry_a_card(connect) -> None:
    ada = await connect()
    await ada.join("lobby", "Ada")
    await ada.say(
        "```\n[REQUEST → @Rules]\nFrom: @Ada\nRequestId: ada-123\nTask: what is 2+2\n"
        "Depth: 1/5\n```"
    )
    message = (await ada.expect("ack"))["message"]
    assert message["protocol"]["type"] == "REQUEST"
    assert message["protocol"]["request_id"] == "ada-123"
    assert message["protocol"]["depth"] == {"current": 1, "max": 5}


async def test_plain_human_text_has_no_card(connect) -> None:
    ada = await connect()
    await ada.join("lobby", "Ada")
    await ada.say("just chatting")
    assert (await ada.expect("ack"))["message"]["protocol"] is None


async def test_bound_rooms_are_reported_so_the_page_can_hint(connect, webchat) -> None:
    webchat.adapter.set_bound_rooms(["lobby"])
    client = await connect()
    assert (await client.join("lobby", "Ada"))["bound"] is True
    assert (await client.join("elsewhere", "Ada"))["bound"] is False


async def test_a_failing_sink_is_reported_to_the_sender(start_webchat, http) -> None:
    chat = await start_webchat()

    async def broken_sink(inbound) -> None:
        raise RuntimeError("core is down")

    chat.adapter.sink = broken_sink
    ada = await open_client(http, chat.ws_url)
    await ada.join("lobby", "Ada")
    client_message_id = await ada.say("hello?")
    await ada.expect("ack")
    error = await ada.expect("error")
    assert error["code"] == "not_delivered"
    assert error["client_message_id"] == client_message_id
    await ada.assert_quiet()



async def test_a_page_closed_right_after_sending_still_reaches_the_bots(
    start_webchat, http
) -> None:
    """The ack write fails (the page is gone); the message must be handed off anyway."""
    chat = await start_webchat()
    tries = 20
    for n in range(tries):
        page = await open_client(http, chat.ws_url)
        await page.join("lobby", "Ada")
        await page.say(f"send and run {n}")
        page.ws._writer.transport.abort()  # gone at once, unread frames and all
    got = [await wait_for(chat.inbound) for _ in range(tries)]
    assert sorted(inbound.text for inbound in got) == sorted(
        f"send and run {n}" for n in range(tries)
    ), f"lost {tries - len(got)} of {tries}"


async def test_a_resend_after_a_failed_hand_off_is_handed_off(start_webchat, http) -> None:
    chat = await start_webchat()
    real_sink = chat.adapter.sink
    failures: list[str] = []

    async def failing_once(inbound) -> None:
        if not failures:
            failures.append(inbound.message_id)
            raise RuntimeError("core is busy")
        await real_sink(inbound)

    chat.adapter.sink = failing_once
    ada = await open_client(http, chat.ws_url)
    await ada.join("lobby", "Ada")
    await ada.say("try again", client_message_id="m-again")
    await drain_until(ada, "error")
    await ada.say("try again", client_message_id="m-again")
    await ada.expect("ack")
    delivered = await wait_for(chat.inbound)
    assert failures == [delivered.message_id] and delivered.text == "try again"
    await ada.say("try again", client_message_id="m-again")  # now it is handed off: no more
    await ada.expect("ack")
    await ada.assert_quiet()
    assert chat.inbound.empty()
