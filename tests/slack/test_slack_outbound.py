"""Outbounds → Slack Web API calls, through the real slack_sdk against the fake."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest
from slack_support import (
    CHANNEL,
    SECRETS,
    MakeAdapter,
    Sink,
    binding,
    outbound,
    relayed_after,
)

from bridge.core.adapter import PermanentSendError, TransientSendError
from bridge.core.model import OutboundKind, PlatformRef
from bridge.core.outbox import Lane, Outbox
from bridge.store.memory import MemoryStore
from bridge.store.relay import OutboxItem
from tests.fakes.slack import FakeSlack


async def test_a_reply_is_posted_under_the_bots_own_name_and_icon(
    fake: FakeSlack, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(icons={"mantis": "https://example.com/mantis.png",
                                        "Echo": ":robot_face:"})

    ref = await adapter.send(outbound("the build is *green*"))
    await adapter.send(outbound("echo", sender="Echo"))

    first, second = fake.calls_to("chat.postMessage")
    assert first.params["text"] == "the build is *green*"
    assert first.params["username"] == "Mantis"
    assert first.params["icon_url"] == "https://example.com/mantis.png"
    assert second.params["icon_emoji"] == ":robot_face:"
    assert "blocks" not in first.params
    assert ref == PlatformRef(CHANNEL, fake.posts(CHANNEL)[0]["ts"], None)


async def test_without_the_customize_scope_the_name_is_a_bold_line_said_once(
    fake: FakeSlack, make_adapter: MakeAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    fake.scopes.remove("chat:write.customize")
    caplog.set_level(logging.WARNING, logger="adapters.slack")
    adapter = await make_adapter()

    ref = await adapter.send(outbound("first"))
    await adapter.send(outbound("second"))
    await adapter.edit(ref, outbound("first, edited"))

    posted = fake.calls_to("chat.postMessage")
    assert [call.params["text"] for call in posted] == ["*Mantis*\nfirst", "*Mantis*\nsecond"]
    assert all("username" not in call.params for call in posted)
    assert fake.texts(CHANNEL)[0] == "*Mantis*\nfirst, edited"
    warnings = [r for r in caplog.records if "chat:write.customize" in r.getMessage()]
    assert len(warnings) == 1


async def test_a_binding_can_ask_for_the_name_line(
    fake: FakeSlack, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()

    await adapter.send(outbound("hi", binding=binding(display="prefix")))

    [call] = fake.calls_to("chat.postMessage")
    assert call.params["text"] == "*Mantis*\nhi" and "username" not in call.params


async def test_a_reply_in_a_thread_stays_in_it(fake: FakeSlack, make_adapter: MakeAdapter) -> None:
    adapter = await make_adapter()

    ref = await adapter.send(outbound("threaded", thread_id="1764000000.000777"))

    assert fake.calls_to("chat.postMessage")[0].params["thread_ts"] == "1764000000.000777"
    assert ref.thread_id == "1764000000.000777"
    assert fake.texts(CHANNEL, "1764000000.000777") == ["threaded"]


async def test_edit_and_delete_change_the_posted_message(
    fake: FakeSlack, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    ref = await adapter.send(outbound("draft"))

    await adapter.edit(ref, outbound("final words"))
    assert fake.texts(CHANNEL) == ["final words"]
    await adapter.delete(ref)
    assert fake.texts(CHANNEL) == []
    await adapter.delete(ref)  # already gone: still a success

    chat = [call.method for call in fake.calls if call.method.startswith("chat.")]
    assert chat == ["chat.postMessage", "chat.update", "chat.delete", "chat.delete"]


async def test_a_rate_limit_is_a_transient_error_with_slacks_retry_after(
    fake: FakeSlack, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    fake.rate_limit("chat.postMessage", retry_after=7)

    with pytest.raises(TransientSendError) as raised:
        await adapter.send(outbound("too fast"))

    assert raised.value.retry_after == 7
    await adapter.send(outbound("later"))
    assert fake.texts(CHANNEL) == ["later"]


async def test_an_edit_rate_limit_holds_every_edit_of_the_workspace(
    fake: FakeSlack, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    ref = await adapter.send(outbound("draft"))
    fake.rate_limit("chat.update", retry_after=30)

    with pytest.raises(TransientSendError) as raised:
        await adapter.edit(ref, outbound("more"))

    assert raised.value.retry_after == 30
    assert adapter.pacer.wait_time() > 29  # nobody's edit in the workspace goes before then


@pytest.mark.parametrize(
    ("error", "status", "transient", "hint"),
    [
        ("not_in_channel", 200, False, "/invite"),
        ("channel_not_found", 200, False, "chat id"),
        ("is_archived", 200, False, "archived"),
        ("internal_error", 200, True, None),
        ("service_unavailable", 503, True, None),
    ],
)
async def test_slack_refusals_are_permanent_and_outages_transient(
    fake: FakeSlack, make_adapter: MakeAdapter, error: str, status: int, transient: bool,
    hint: str | None,
) -> None:
    adapter = await make_adapter()
    fake.fail("chat.postMessage", error, status=status, times=1)

    with pytest.raises(TransientSendError if transient else PermanentSendError) as raised:
        await adapter.send(outbound("hello"))

    assert error in str(raised.value)
    if hint:
        assert hint in str(raised.value)


async def test_slack_being_unreachable_is_transient(
    fake: FakeSlack, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    await fake.stop()

    with pytest.raises(TransientSendError):
        await adapter.send(outbound("anyone there?"))


async def test_no_token_or_secret_reaches_the_log(
    fake: FakeSlack, make_adapter: MakeAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    adapter = await make_adapter()
    ref = await adapter.send(outbound("hello"))
    await adapter.edit(ref, outbound("hello again"))
    await fake.disconnect()
    await fake.wait_until(lambda: fake.sockets_opened == 2 and fake.connected == 1)

    assert "slack_sdk" in caplog.text  # the libraries did log at debug level
    for secret in SECRETS:
        assert secret not in caplog.text
    assert "ticket=" in caplog.text and "ticket=<redacted>" in caplog.text


async def test_a_streamed_reply_that_shrinks_deletes_its_leftover_parts(
    fake: FakeSlack, make_adapter: MakeAdapter, sink: Sink
) -> None:
    adapter = await make_adapter()
    store = MemoryStore()
    outbox = Outbox(store.outbox, store.message_map, lambda lane: (adapter, binding()),
                    clock=lambda: datetime.now(UTC))
    lane = Lane("slack:main", CHANNEL).key

    await outbox.put(OutboxItem(lane, "delta", "Echo", ["one", "two", "three"], run_id="r1"))
    await outbox.wait_idle()
    assert fake.texts(CHANNEL) == ["one", "two", "three"]
    await outbox.put(OutboxItem(lane, "final", "Echo", ["all in one"], run_id="r1"))
    await outbox.wait_idle()
    await outbox.stop()

    assert fake.texts(CHANNEL) == ["all in one"]
    assert len(fake.calls_to("chat.delete")) == 2
    assert await relayed_after(fake, sink) == []  # the deletes come back as the app's own


async def test_a_final_whose_preview_was_deleted_is_posted_anew(
    fake: FakeSlack, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    ref = await adapter.send(outbound("streaming…", kind=OutboundKind.DELTA))
    fake.delete(CHANNEL, ref.message_id)  # a person removes the preview

    with pytest.raises(PermanentSendError, match="message_not_found"):
        await adapter.edit(ref, outbound("streaming more", kind=OutboundKind.DELTA))
    await adapter.edit(ref, outbound("the whole reply", kind=OutboundKind.FINAL))

    assert fake.texts(CHANNEL) == ["the whole reply"]
