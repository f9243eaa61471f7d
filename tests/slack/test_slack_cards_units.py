"""The Slack card's pure parts (blocks, payload reading) and the adapter's posts of a card.

Blocks are checked with the fake's model of Slack's limits (`blocks_problem`), the same
check its `chat.postMessage` applies; the adapter's calls go through the real slack_sdk.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from slack_support import CHANNEL, MakeAdapter, outbound

from adapters.slack.cards import (
    MAX_SECTION_TEXT,
    OwnWordsMetadata,
    card_blocks,
    own_words_view,
    read_press,
    read_submission,
    text_sections,
)
from adapters.slack.manifest import manifest
from bridge.core.cards import Card, card_key, read_button_data
from tests.fakes.slack import FakeSlack, blocks_problem, view_problem


def a_card(**fields: Any) -> Card:
    values: dict[str, Any] = {
        "key": card_key("lane", "ada-1", "t"), "decision": "run-1", "request_id": "ada-1",
        "question": "Which city?", "asker": "Rules", "requester": "Ada",
        "requester_id": "U0ADA", "depth": (2, 5),
        "deadline": datetime(2026, 11, 29, 12, 10, tzinfo=UTC),
        "options": ("Paris", "Tokyo"),
    }
    values.update(fields)
    return Card(**values)


def actions(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for b in blocks if b["type"] == "actions" for e in b["elements"]]


def test_an_open_card_has_a_button_per_option_then_own_words_and_stop() -> None:
    blocks = card_blocks("```\nCLARIFY …\n```", a_card())

    assert blocks_problem(blocks) is None
    assert [b["type"] for b in blocks] == ["section", "context", "actions"]
    buttons = actions(blocks)
    assert [b["text"]["text"] for b in buttons] == ["Paris", "Tokyo", "Answer in my own words",
                                                    "Stop"]
    assert [read_button_data(b["value"]) for b in buttons] == [
        (a_card().key, "0"), (a_card().key, "1"), (a_card().key, "own"), (a_card().key, "stop")]
    assert "style" not in buttons[0] and buttons[-1]["style"] == "danger"
    context = blocks[1]["elements"][0]["text"]
    assert context.startswith("*Rules* asks Ada · request `ada-1` · depth 2/5 · answer by ")
    assert f"<!date^{int(a_card().deadline.timestamp())}^{{time}}|12:10 UTC>" in context


def test_ten_long_options_stay_inside_slacks_limits() -> None:
    options = tuple(f"{n} " + "x" * 78 for n in range(10))  # 80 characters, the protocol's most
    blocks = card_blocks("question", a_card(options=options))

    assert blocks_problem(blocks) is None
    buttons = actions(blocks)
    assert len(buttons) == 12
    assert all(len(b["text"]["text"]) <= 75 for b in buttons)
    assert buttons[0]["text"]["text"].endswith("…")


def test_a_settled_card_shows_its_outcome_and_no_buttons() -> None:
    settled = a_card().settled("answered", "answered by <Ada> (slack): Tokyo & co")
    blocks = card_blocks("question", settled)

    assert blocks_problem(blocks) is None
    assert [b["type"] for b in blocks] == ["section", "context"]
    context = blocks[1]["elements"][0]["text"]
    assert context.endswith("answered by &lt;Ada&gt; (slack): Tokyo &amp; co")
    assert "answer by" not in context


def test_names_in_the_context_line_are_not_markup() -> None:
    blocks = card_blocks("q", a_card(asker="<!channel>", requester="a&b"))
    assert blocks[1]["elements"][0]["text"].startswith("*&lt;!channel&gt;* asks a&amp;b")


@pytest.mark.parametrize("text", [
    "short",
    "line\n" * 1500,
    "```\n" + "code line\n" * 700 + "```\nafter",
    "y" * 9000,
])
def test_long_text_is_cut_into_sections_slack_takes(text: str) -> None:
    pieces = text_sections(text)

    assert all(0 < len(piece) <= MAX_SECTION_TEXT for piece in pieces)
    assert all(piece.count("```") % 2 == 0 for piece in pieces) or "```" not in text
    rejoined = "".join(piece.replace("```", "").replace("\n", "") for piece in pieces)
    assert rejoined == text.replace("```", "").replace("\n", "")
    assert blocks_problem(card_blocks(text, a_card())) is None


def test_the_own_words_modal_is_one_slack_opens() -> None:
    view = own_words_view(a_card(asker="A bot with a very long name indeed"),
                          OwnWordsMetadata("bcn:x:own", CHANNEL, "1.2"))

    assert view_problem(view) is None
    assert OwnWordsMetadata.load(view["private_metadata"]) == OwnWordsMetadata(
        "bcn:x:own", CHANNEL, "1.2")


def press_body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "block_actions", "user": {"id": "U0ADA", "name": "ada"},
        "channel": {"id": CHANNEL}, "trigger_id": "1.7.abc",
        "container": {"type": "message", "message_ts": "5.0", "channel_id": CHANNEL},
        "message": {"ts": "5.0", "thread_ts": "4.0"},
        "actions": [{"action_id": "bcn_card_0", "value": "bcn:k:0", "action_ts": "9.9"}],
    }
    body.update(changes)
    return body


def test_a_press_is_read_from_slacks_payload() -> None:
    press = read_press(press_body())

    assert press is not None
    assert (press.user_id, press.user_name, press.channel) == ("U0ADA", "ada", CHANNEL)
    assert (press.thread, press.data, press.trigger_id, press.tap_id) == (
        "4.0", "bcn:k:0", "1.7.abc", "1.7.abc")
    parent = read_press(press_body(message={"ts": "5.0", "thread_ts": "5.0"}))
    assert parent is not None and parent.thread is None  # a thread's parent is in the channel


@pytest.mark.parametrize("changes", [
    {"user": None}, {"user": {"id": 7}}, {"channel": "C1", "container": {}},
    {"actions": []}, {"actions": "x"}, {"actions": [{"value": 3}]}, {"actions": [None]},
])
def test_a_press_payload_without_what_a_tap_needs_is_not_read(changes: dict[str, Any]) -> None:
    assert read_press(press_body(**changes)) is None


@pytest.mark.parametrize("metadata", [None, 3, "", "not json", "[]", '{"data": 1}',
                                      '{"data": "bcn:k:own"}', '{"data": "x", "channel": ""}'])
def test_a_submission_without_its_cards_metadata_is_not_read(metadata: Any) -> None:
    body = {"type": "view_submission", "user": {"id": "U0ADA"},
            "view": {"id": "V1", "private_metadata": metadata}}
    assert read_submission(body) is None


def test_the_manifest_turns_interactivity_on_with_its_request_url_in_http_mode() -> None:
    socket = manifest(mode="socket")
    http = manifest(mode="http", public_url="https://b.example.org", path="/slack/x/events")
    custom = manifest(mode="http", public_url="https://b.example.org", path="/hooks/slack")

    assert socket["settings"]["interactivity"] == {"is_enabled": True}
    assert http["settings"]["interactivity"] == {
        "is_enabled": True, "request_url": "https://b.example.org/slack/x/interactivity"}
    assert custom["settings"]["interactivity"]["request_url"] == \
        "https://b.example.org/hooks/slack"  # a custom events route takes presses too


async def test_a_card_is_posted_with_blocks_and_redrawn_without_buttons(
    fake: FakeSlack, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    card = a_card()

    ref = await adapter.send(outbound("Which city?", sender="Rules", card=card))
    posted = fake.message(CHANNEL, ref.message_id)
    assert posted["text"] == "Which city?"  # the notification fallback, and what bots read
    assert len(fake.buttons(CHANNEL, ref.message_id)) == 4

    outcome = "answered by Ada (slack): Tokyo"
    await adapter.edit(ref, outbound("Which city?", sender="Rules",
                                     card=card.settled("answered", outcome)))
    shown = fake.message(CHANNEL, ref.message_id)
    assert fake.buttons(CHANNEL, ref.message_id) == []
    assert shown["text"] == "Which city?"
    assert outcome in shown["blocks"][-1]["elements"][0]["text"]
    update = fake.calls_to("chat.update")[-1]
    assert [b["type"] for b in update.params["blocks"]] == ["section", "context"]


async def test_an_edit_without_a_card_sends_no_blocks(
    fake: FakeSlack, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter()
    ref = await adapter.send(outbound("draft"))
    await adapter.edit(ref, outbound("final"))
    assert "blocks" not in fake.calls_to("chat.update")[-1].params
