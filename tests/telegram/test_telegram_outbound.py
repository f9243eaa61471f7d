"""Bot replies through the adapter, real PTB, to the fake Bot API."""

from __future__ import annotations

import logging

import pytest
from telegram_support import (
    GROUP,
    PUPPET_TOKEN,
    TOKEN,
    MakeAdapter,
    Received,
    account_config,
    outbound,
)

from adapters.telegram import TelegramAdapter
from adapters.telegram.errors import TelegramStartError
from adapters.telegram.outbound import MAX_TEXT, TELEGRAM_MAX_TEXT
from bridge.config.sections import CommandNames
from bridge.core.adapter import AdapterStartError, PermanentSendError, TransientSendError
from bridge.core.model import OutboundKind, PlatformRef
from bridge.text import split_for
from tests.fakes.telegram import FakeTelegram


async def test_reply_is_html_with_the_bot_name_in_bold(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()

    ref = await adapter.send(outbound("<i>done</i> &amp; dusted", sender="Mantis & Co"))

    [call] = fake.calls_to("sendMessage")
    assert call.token == TOKEN
    assert call.params["parse_mode"] == "HTML"
    assert call.params["text"] == "<b>Mantis &amp; Co</b>\n<i>done</i> &amp; dusted"
    assert ref == PlatformRef(chat_id=str(GROUP), message_id=ref.message_id)
    assert fake.messages[(GROUP, int(ref.message_id))]["text"] == "Mantis & Co\ndone & dusted"


async def test_reply_target_and_topic_are_kept(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    ref = await adapter.send(outbound("answer", reply_to="41", thread="7"))

    params = fake.calls_to("sendMessage")[0].params
    assert params["reply_parameters"] == {"message_id": 41, "allow_sending_without_reply": True}
    assert params["message_thread_id"] == 7
    assert ref.thread_id == "7"


async def test_long_names_are_cut_so_the_prefix_fits(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    body = "x" * MAX_TEXT

    await adapter.send(outbound(body, sender="N" * 500))

    text = fake.calls_to("sendMessage")[0].params["text"]
    name = text.removeprefix("<b>").partition("</b>")[0]
    assert name.endswith("…") and len(name) <= 64
    assert len(name) + 1 + len(body) <= TELEGRAM_MAX_TEXT


async def test_puppet_posts_as_itself_without_prefix(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(puppets={"Mantis": PUPPET_TOKEN})

    ref = await adapter.send(outbound("<b>hi</b>", sender="mantis"))
    await adapter.edit(ref, outbound("<b>hi</b> there", sender="mantis"))
    await adapter.send(outbound("no puppet", sender="Lotbot"))

    first, other = fake.calls_to("sendMessage")
    assert (first.token, first.params["text"]) == (PUPPET_TOKEN, "<b>hi</b>")
    assert fake.calls_to("editMessageText")[0].token == PUPPET_TOKEN
    assert fake.messages[(GROUP, int(ref.message_id))]["from"]["username"] == "MantisBot"
    assert (other.token, other.params["text"]) == (TOKEN, "<b>Lotbot</b>\nno puppet")


async def test_puppet_that_cannot_post_hands_over_to_the_main_bot(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(puppets={"Mantis": PUPPET_TOKEN})
    fake.kick(PUPPET_TOKEN, GROUP, "Forbidden: bot is not a member of the supergroup chat")

    ref = await adapter.send(outbound("still arrives", sender="Mantis"))

    assert fake.messages[(GROUP, int(ref.message_id))]["text"] == "Mantis\nstill arrives"
    assert fake.message_owner[(GROUP, int(ref.message_id))] == TOKEN


async def test_streaming_reply_is_edited_in_place(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    ref = await adapter.send(outbound("Work", kind=OutboundKind.DELTA, run_id="r1"))
    for text in ("Working on", "Working on it", "Working on it"):
        await adapter.edit(ref, outbound(text, kind=OutboundKind.DELTA, run_id="r1"))
    await adapter.edit(ref, outbound("Working on it. <b>Done.</b>", run_id="r1"))

    edits = fake.calls_to("editMessageText")
    assert len(edits) == 4  # the unchanged third edit is "not modified": no error
    assert {call.params["message_id"] for call in edits} == {int(ref.message_id)}
    assert fake.messages[(GROUP, int(ref.message_id))]["text"] == "Mantis\nWorking on it. Done."


async def test_rate_limit_becomes_transient_error_with_retry_after(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    fake.fail_next(
        "sendMessage", status=429, description="Too Many Requests: retry after 7", retry_after=7
    )

    with pytest.raises(TransientSendError) as caught:
        await adapter.send(outbound("soon"))

    assert caught.value.retry_after == 7
    assert len(fake.calls_to("sendMessage")) == 1  # PTB did not retry on its own
    ref = await adapter.send(outbound("soon"))
    assert fake.messages[(GROUP, int(ref.message_id))]["text"] == "Mantis\nsoon"


async def test_rate_limited_edit_is_transient_too(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    ref = await adapter.send(outbound("a"))
    fake.fail_next("editMessageText", status=429, description="Too Many Requests", retry_after=3)

    with pytest.raises(TransientSendError) as caught:
        await adapter.edit(ref, outbound("ab"))

    assert caught.value.retry_after == 3


@pytest.mark.parametrize(
    ("status", "description"),
    [(500, "Internal Server Error"), (502, "Bad Gateway")],
)
async def test_server_errors_are_transient(
    fake: FakeTelegram, make_adapter: MakeAdapter, status: int, description: str
) -> None:
    adapter = await make_adapter()
    fake.fail_next("sendMessage", status=status, description=description)

    with pytest.raises(TransientSendError) as caught:
        await adapter.send(outbound("x"))

    assert caught.value.retry_after is None


async def test_dropped_connection_is_transient(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    fake.drop_next("sendMessage")

    with pytest.raises(TransientSendError):
        await adapter.send(outbound("x"))


async def test_html_telegram_cannot_parse_goes_out_as_plain_text(
    fake: FakeTelegram, make_adapter: MakeAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    adapter = await make_adapter()

    ref = await adapter.send(outbound("<b>bold <i>crossed</b> &amp; more</i>"))

    html_try, plain = fake.calls_to("sendMessage")
    assert html_try.params["parse_mode"] == "HTML"
    assert "parse_mode" not in plain.params
    assert plain.params["text"] == "Mantis\nbold crossed & more"
    assert fake.messages[(GROUP, int(ref.message_id))]["text"] == "Mantis\nbold crossed & more"
    assert "refused the HTML" in caplog.text


async def test_edit_falls_back_to_plain_text_as_well(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    ref = await adapter.send(outbound("first"))
    fake.reject_html = True

    await adapter.edit(ref, outbound("<b>second</b>"))

    assert fake.messages[(GROUP, int(ref.message_id))]["text"] == "Mantis\nsecond"


async def test_protocol_block_fences_stay_literal_text(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    block = "```\n[RESPONSE → @Lotbot]\nFrom: @Mantis\nRequestId: lotbot-1\nResult: ok\n```"

    ref = await adapter.send(outbound(block))

    assert fake.messages[(GROUP, int(ref.message_id))]["text"] == f"Mantis\n{block}"


@pytest.mark.parametrize(
    ("status", "description"),
    [
        (400, "Bad Request: chat not found"),
        (403, "Forbidden: bot was kicked from the supergroup chat"),
        (403, "Forbidden: bot was blocked by the user"),
    ],
)
async def test_chat_gone_is_permanent(
    fake: FakeTelegram, make_adapter: MakeAdapter, status: int, description: str
) -> None:
    adapter = await make_adapter()
    fake.fail_next("sendMessage", status=status, description=description)

    with pytest.raises(PermanentSendError) as caught:
        await adapter.send(outbound("x"))

    assert TOKEN not in str(caught.value)


async def test_unknown_chat_is_permanent(fake: FakeTelegram, make_adapter: MakeAdapter) -> None:
    adapter = await make_adapter()

    with pytest.raises(PermanentSendError, match=r"(?i)chat not found"):
        await adapter.send(outbound("x", chat=-100555))


async def test_typing_indicator(fake: FakeTelegram, make_adapter: MakeAdapter) -> None:
    adapter = await make_adapter()

    await adapter.typing(str(GROUP), "7")
    fake.fail_next("sendChatAction", status=429, description="Too Many Requests", retry_after=1)
    await adapter.typing(str(GROUP))  # cosmetic: a failure is not raised

    first, second = fake.calls_to("sendChatAction")
    assert first.params == {"chat_id": GROUP, "action": "typing", "message_thread_id": 7}
    assert "message_thread_id" not in second.params


async def test_start_registers_commands_and_quiet_privacy(
    fake: FakeTelegram, make_adapter: MakeAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    await make_adapter()

    assert [c["command"] for c in fake.commands[TOKEN]] == ["ask", "requests", "stop", "new"]
    assert all(c["description"] for c in fake.commands[TOKEN])
    assert "privacy mode" not in caplog.text
    assert "connected as @BridgeBot" in caplog.text


async def test_renamed_and_disabled_commands_shape_the_menu(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    await make_adapter(commands=CommandNames(ask="delegate", stop=False))

    assert [c["command"] for c in fake.commands[TOKEN]] == ["delegate", "requests", "new"]


async def test_a_reply_goes_to_the_topic_it_belongs_to(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    await adapter.send(outbound("in the topic", thread_id="9"))
    await adapter.send(outbound("in the bound topic", thread="5", thread_id=None))

    sent = [call.params for call in fake.calls if call.method == "sendMessage"]
    assert [params.get("message_thread_id") for params in sent] == [9, 5]


async def test_privacy_mode_is_warned_about_with_the_fix(
    fake: FakeTelegram, make_adapter: MakeAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    fake.bots[TOKEN].can_read_all_group_messages = False

    await make_adapter()

    [warning] = [r for r in caplog.records if "privacy mode" in r.getMessage()]
    assert warning.levelno == logging.WARNING
    assert "/setprivacy" in warning.getMessage() and "admin" in warning.getMessage()


async def test_failed_command_registration_does_not_stop_start(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    fake.fail_next("setMyCommands", status=500, description="Internal Server Error")

    adapter = await make_adapter()

    assert (await adapter.send(outbound("up"))).message_id


async def test_long_reply_split_by_the_core_arrives_in_valid_parts(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    words = [f"<b>word{i}</b> &amp; <i>more {i}</i>" for i in range(400)]
    rendered = " ".join(words)
    # What a reader sees of it, written out rather than computed by the adapter's own code.
    visible = " ".join(f"word{i} & more {i}" for i in range(400))
    assert len(visible) > 6000

    parts = split_for(rendered, "telegram", adapter.capabilities.max_length)
    refs = [
        await adapter.send(outbound(part, run_id="r1", part=n, parts=len(parts)))
        for n, part in enumerate(parts, 1)
    ]

    assert len(parts) >= 2
    assert all(call.params["parse_mode"] == "HTML" for call in fake.calls_to("sendMessage"))
    shown = [fake.messages[(GROUP, int(ref.message_id))]["text"] for ref in refs]
    assert all(text.startswith("Mantis\n") for text in shown)
    assert all(len(text.encode("utf-16-le")) // 2 <= TELEGRAM_MAX_TEXT for text in shown)
    joined = " ".join(text.removeprefix("Mantis\n").strip() for text in shown)
    assert joined.split() == visible.split()


async def test_rejected_token_fails_start_without_showing_the_token(
    fake: FakeTelegram, received: Received
) -> None:
    wrong = "555555555:WRONGwrongWRONGwrongWRONGwrong12345"
    adapter = TelegramAdapter("main", account_config(fake, token=wrong), received)

    with pytest.raises(TelegramStartError, match="rejected the bot token") as caught:
        await adapter.start()

    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert wrong.partition(":")[2] not in str(caught.value)
    assert isinstance(caught.value, AdapterStartError)  # `bcn-bridge run` shows one line
    await adapter.stop()  # harmless after a failed start
