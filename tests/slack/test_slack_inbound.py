"""Slack events → Inbounds, through the real slack-bolt over Socket Mode against the fake."""

from __future__ import annotations

import asyncio
import logging

import pytest
from slack_sdk.web.async_client import AsyncWebClient
from slack_support import (
    ADA,
    CHANNEL,
    GRACE,
    LOTBOT_BOT,
    LOTBOT_USER,
    OTHER_CHANNEL,
    MakeAdapter,
    Sink,
    outbound,
    relayed_after,
)

from adapters.slack.people import People
from bridge.config.sections import CommandNames
from bridge.core.account_state import AccountState
from bridge.core.model import Inbound
from bridge.store.memory import MemoryStore
from tests.fakes.slack import FakeSlack


async def test_a_message_arrives_with_the_senders_display_name(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    await make_adapter()
    event = fake.human_message(CHANNEL, ADA, "hello *team* &amp; friends")

    delivery = await fake.push(event)
    [inbound] = await sink.wait_for(1)

    await fake.acked(delivery)
    assert (inbound.channel, inbound.chat_id, inbound.message_id) == (
        "slack:main", CHANNEL, event["ts"],
    )
    assert inbound.sender.id == ADA and inbound.sender.name == "Ada"
    assert inbound.sender.is_bot is False
    assert inbound.text == "hello **team** & friends"
    assert inbound.thread_id is None and not inbound.is_edit


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        ({"display_name": "Gracie", "real_name": "Grace Hopper"}, "Gracie"),
        ({"display_name": "", "real_name": "Grace Hopper"}, "Grace Hopper"),
        ({"display_name": "", "real_name": ""}, "grace"),
    ],
)
async def test_display_name_then_real_name_then_user_name(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink, profile: dict[str, str],
    expected: str,
) -> None:
    fake.users[GRACE]["profile"] = profile
    fake.users[GRACE]["real_name"] = profile["real_name"]
    await make_adapter()

    await fake.push(fake.human_message(CHANNEL, GRACE, "who am I?"))
    [inbound] = await sink.wait_for(1)

    assert inbound.sender.name == expected


async def test_names_are_looked_up_once_and_cached(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    await make_adapter()
    for n in range(3):
        await fake.push(fake.human_message(CHANNEL, ADA, f"message {n}"))
    await sink.wait_for(3)

    assert [call.params["user"] for call in fake.calls_to("users.info")] == [ADA]


async def test_mentions_and_channel_links_become_names(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    await make_adapter()
    text = f"<@{GRACE}> see <#{OTHER_CHANNEL}> and <#{CHANNEL}|ops>, <@{ADA}|ada> too"

    await fake.push(fake.human_message(CHANNEL, ADA, text))
    [inbound] = await sink.wait_for(1)

    assert inbound.text == "@Grace Hopper see #random and #ops, @Ada too"
    assert inbound.mentions == ("Grace Hopper", "Ada")


async def test_the_bots_mention_of_a_person_becomes_a_slack_mention(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    adapter = await make_adapter()
    await fake.push(fake.human_message(CHANNEL, ADA, "hi"))
    await sink.wait_for(1)

    directory = adapter.directory(CHANNEL)

    assert directory.id_for("Ada") == ADA
    assert directory.id_for("ada") == ADA  # the handle works too
    assert directory.name_for(ADA) == "Ada"


async def test_another_apps_bot_is_relayed_as_a_bot_under_its_name(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    await make_adapter()
    event = fake.other_bot_message(
        CHANNEL, bot_id=LOTBOT_BOT, user=LOTBOT_USER, name="Lotbot", text="beep"
    )

    await fake.push(event)
    [inbound] = await sink.wait_for(1)

    assert inbound.sender.is_bot is True
    assert (inbound.sender.id, inbound.sender.name) == (LOTBOT_USER, "Lotbot")


async def test_a_thread_reply_carries_its_thread(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    await make_adapter()
    parent = fake.human_message(CHANNEL, ADA, "parent")
    reply = fake.human_message(CHANNEL, GRACE, "in the thread", thread_ts=parent["ts"])

    await fake.push(parent)
    await fake.push(reply)
    first, second = await sink.wait_for(2)

    assert first.thread_id is None
    assert (second.chat_id, second.thread_id) == (CHANNEL, parent["ts"])


async def test_edits_and_deletes_arrive_as_such(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    await make_adapter()
    original = fake.human_message(CHANNEL, ADA, "teh plan")
    await fake.push(original)
    await fake.push(fake.edit(CHANNEL, original["ts"], "the plan"))
    await fake.push(fake.delete(CHANNEL, original["ts"]))

    _, edit, delete = await sink.wait_for(3)

    assert (edit.is_edit, edit.message_id, edit.text) == (True, original["ts"], "the plan")
    assert edit.sender.name == "Ada"
    assert (delete.is_delete, delete.message_id, delete.text) == (True, original["ts"], "the plan")


async def test_a_link_preview_is_no_edit(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    await make_adapter()
    original = fake.human_message(CHANNEL, ADA, "<https://example.com>")
    await fake.push(original)
    await sink.wait_for(1)
    unfurled = {**original, "attachments": [{"title": "Example"}]}
    changed = {"type": "message", "subtype": "message_changed", "channel": CHANNEL,
               "ts": fake.next_ts(), "message": unfurled, "previous_message": original}

    await fake.push(changed)

    assert await relayed_after(fake, sink) == ["<https://example.com>"]


async def test_files_are_attachments_without_any_secret_in_their_url(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    await make_adapter()
    files = [{
        "id": "F0123", "name": "plan.png", "mimetype": "image/png", "size": 2048,
        "url_private": "https://files.slack.com/files-pri/T0-F0123/plan.png?t=xoxe-secret",
        "permalink_public": "https://slack-files.com/T0-F0123-abc?pub_secret=nope",
    }]  # fmt: skip

    await fake.push(fake.human_message(CHANNEL, ADA, "the plan", files=files))
    [inbound] = await sink.wait_for(1)

    [attachment] = inbound.attachments
    assert (attachment.type, attachment.name, attachment.mime, attachment.size) == (
        "image", "plan.png", "image/png", 2048,
    )
    assert attachment.file_id == "F0123"
    assert attachment.url == "https://files.slack.com/files-pri/T0-F0123/plan.png"


async def test_joins_and_topic_changes_are_not_relayed(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    await make_adapter()
    join = fake.human_message(CHANNEL, ADA, "<@U0ADA> has joined the channel",
                              subtype="channel_join")
    topic = fake.human_message(CHANNEL, ADA, "set the topic", subtype="channel_topic")

    await fake.push(join)
    await fake.push(topic)

    assert await relayed_after(fake, sink) == []


async def test_a_redelivered_event_is_relayed_once(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    await make_adapter()
    first = await fake.push(fake.human_message(CHANNEL, ADA, "only once"))
    await sink.wait_for(1)

    again = await fake.redeliver(first)
    await fake.acked(again)

    assert fake.acks[-1] == {"envelope_id": again.envelope_id}
    assert await relayed_after(fake, sink) == ["only once"]


async def test_a_redelivery_after_a_restart_is_still_dropped(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    state = AccountState(MemoryStore(), "slack:main")  # the store outlives the adapter
    first_adapter = await make_adapter(state=state)
    first = await fake.push(fake.human_message(CHANNEL, ADA, "before the restart"))
    await sink.wait_for(1)
    await first_adapter.stop()

    await make_adapter(state=state)
    await fake.redeliver(first)

    assert await relayed_after(fake, sink) == ["before the restart"]


async def test_the_apps_own_posts_edits_and_deletes_are_ignored(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    adapter = await make_adapter()
    fake.echo = "before"  # Slack's echo often arrives before chat.postMessage answers

    ref = await adapter.send(outbound("posted under a bot name"))
    plain = await adapter.send(outbound("posted as the app", sender=""))
    await adapter.edit(ref, outbound("edited"))
    await adapter.delete(plain)

    echoes = [d.payload["event"] for d in fake.deliveries if "event" in d.payload]
    assert [e.get("subtype") for e in echoes] == [
        "bot_message", None, "message_changed", "message_deleted",
    ]
    assert "user" not in echoes[2]["message"]  # Bolt's own filter cannot tell: only bot_id
    assert await relayed_after(fake, sink) == []


async def test_asking_the_app_in_a_thread_is_a_command(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    await make_adapter(commands=CommandNames(ask="bcnask"))
    parent = fake.human_message(CHANNEL, ADA, "parent")
    bot = fake.bot_user_id
    texts = [f"<@{bot}> bcnask Rules what is 6 times 7", f"<@{bot}>: requests",
             f"<@{bot}> asked around", f"<@{bot}> ask Rules (not a configured word)"]

    for text in texts:
        await fake.push(fake.human_message(CHANNEL, ADA, text, thread_ts=parent["ts"]))
    inbounds = await sink.wait_for(4)

    assert [i.text for i in inbounds] == [
        "/bcnask Rules what is 6 times 7", "/requests",
        "@bcn-bridge asked around", "@bcn-bridge ask Rules (not a configured word)",
    ]
    assert {i.thread_id for i in inbounds} == {parent["ts"]}


async def test_each_channel_is_logged_once_with_its_id(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="adapters.slack")
    await make_adapter()
    joined = {"type": "member_joined_channel", "user": fake.bot_user_id,
              "channel": OTHER_CHANNEL, "channel_type": "C", "team": fake.team_id}

    await fake.push(joined)
    await fake.push(fake.human_message(OTHER_CHANNEL, ADA, "unbound 1"))
    await fake.push(fake.human_message(OTHER_CHANNEL, ADA, "unbound 2"))
    await sink.wait_for(2)

    lines = [r.getMessage() for r in caplog.records if OTHER_CHANNEL in r.getMessage()]
    assert lines == [
        f'slack:main was added to channel {OTHER_CHANNEL} "#random" '
        f'(not bound; bind it with chat: "{OTHER_CHANNEL}")',
    ]


async def test_an_event_is_acked_before_it_is_relayed(
    fake: FakeSlack, make_adapter: MakeAdapter
) -> None:
    held, both = asyncio.Event(), asyncio.Event()
    relayed: list[str] = []

    async def slow_sink(inbound: Inbound) -> None:
        await held.wait()  # the core is busy (the BCN link is slow, say)
        relayed.append(inbound.text)
        if len(relayed) == 2:
            both.set()

    adapter = await make_adapter()
    adapter.sink = slow_sink
    event = await fake.push(fake.human_message(CHANNEL, ADA, "ack me first"))
    command = await fake.push_command("/requests", "", user=ADA, channel=CHANNEL)

    await fake.acked(event)
    await fake.acked(command)
    assert relayed == []
    held.set()
    await asyncio.wait_for(both.wait(), 10)
    assert relayed == ["ack me first", "/requests"]


async def test_names_are_refreshed_after_the_cache_time_and_kept_when_a_lookup_fails(
    fake: FakeSlack,
) -> None:
    now = [0.0]
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
    people = People(lambda: client, "main", ttl=60, clock=lambda: now[0])

    first = await people.person(ADA)
    fake.users[ADA]["profile"]["display_name"] = "Ada L."
    cached = await people.person(ADA)
    now[0] = 61
    refreshed = await people.person(ADA)
    now[0] = 200
    fake.rate_limit("users.info")
    during_a_rate_limit = await people.person(ADA)

    names = [p.name if p else None for p in (first, cached, refreshed, during_a_rate_limit)]
    assert names == ["Ada", "Ada", "Ada L.", "Ada L."]
    assert len(fake.calls_to("users.info")) == 3


async def test_an_integrations_bot_message_is_a_bot_under_its_username(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    await make_adapter()
    event = {"type": "message", "subtype": "bot_message", "bot_id": "B0HOOK",
             "username": "Deploy Hook", "text": "deployed *v2*", "ts": fake.next_ts(),
             "channel": CHANNEL}

    await fake.push(event)
    [inbound] = await sink.wait_for(1)

    assert (inbound.sender.id, inbound.sender.name, inbound.sender.is_bot) == (
        "B0HOOK", "Deploy Hook", True,
    )
    assert inbound.text == "deployed **v2**"


async def test_an_event_is_acked_only_once_relayed_so_a_crash_gets_it_again(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    """A bridge that dies between Slack's delivery and the relay must not have acked it:
    Slack then redelivers it to the next connection, and it is relayed exactly once."""
    store = MemoryStore()
    never: asyncio.Event = asyncio.Event()
    reached: list[str] = []

    async def dying_core(inbound: Inbound) -> None:
        reached.append(inbound.text)
        await never.wait()  # the process dies right here

    first = await make_adapter(state=AccountState(store, "slack:main", holder="first"))
    first.sink = dying_core
    event = await fake.push(fake.human_message(CHANNEL, ADA, "survive the crash"))
    async with asyncio.timeout(10):
        while not reached:
            await asyncio.sleep(0.01)
    assert not event.acked.is_set()  # the relay has not finished: no ack yet
    # The crash: the worker dies with the event in hand, the socket closes unacked.
    await first._worker.cancel_all()
    assert first._socket is not None
    await first._socket.close()
    first._socket = None

    await make_adapter(state=AccountState(store, "slack:main", holder="second"))
    [relayed] = await sink.wait_for(1)
    assert relayed.text == "survive the crash"
    redelivered = fake.deliveries[-1]
    assert redelivered is not event and redelivered.payload == event.payload
    await fake.acked(redelivered)
    assert not event.acked.is_set()
