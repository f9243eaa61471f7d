"""A bot's question as Slack draws it (Block Kit), and a press or a modal read back.

The core hands a `Card` with the post's rendered text; Slack shows blocks instead of the
text when a message has them, so the card is the text in `section`s, a `context` line (who
asks, the request, its depth, until when it waits) and, while it is open, one `actions`
block of buttons. `text` stays on the message as the notification fallback and as what
other bots reading the channel get, so protocol blocks still reach them exactly as written.
Once settled, the card is redrawn with the outcome in the context line and no buttons.

A button carries the core's opaque data as its `value` and a per-message `action_id`
(`bcn_card_<n>`); Bolt routes presses by that prefix. Nothing a payload says is trusted
beyond what Slack vouches for: the person is the payload's `user` (Slack signed it, or it
came over the app's own Socket Mode connection), and the data is checked against the store
by the core. "Answer in my own words" opens a modal (`views.open`), whose submission carries
the button data and the chat back in its `private_metadata`.

Pure functions over JSON: no network, no state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from adapters.slack.inbound import thread_of
from bridge.core.cards import OWN_WORDS, STOP, Card, read_button_data
from bridge.text.render_slack import escape_slack

ACTION_PREFIX = "bcn_card_"
"""Every card button's `action_id` starts with it (Bolt's listener matches on it)."""
OWN_WORDS_CALLBACK = "bcn_card_own"
"""The own-words modal's `callback_id` (Bolt's view listener matches on it)."""
ANSWER_BLOCK, ANSWER_ACTION = "bcn_answer", "text"
"""Where the modal's one input sits, to read it back and to put an error under it."""

MAX_SECTION_TEXT = 3000
"""Slack refuses a `section` whose text is longer (the message `text` may be 40,000)."""
MAX_BUTTON_TEXT = 75
"""A button label's limit; an option may be 80 characters, so a long one is shortened."""
MAX_MODAL_TITLE = 24
MAX_MODAL_TEXT = 3000
MAX_ANSWER = 2000
"""Longest own-words answer the modal takes (a typed answer is a chat message anyway)."""
MAX_BLOCKS = 50
MAX_INPUT_ERROR = 150
"""An error shown under a modal's input is cut at this length."""
FENCE = "```"


def card_blocks(text: str, card: Card) -> list[dict[str, Any]]:
    """The message's blocks: the rendered text, a context line, and the buttons while open.

    `text` is the post's own rendered mrkdwn (never the card's fields raw: a name or a
    question is not markup); the context line escapes what it shows.
    """
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": part}}
        for part in text_sections(text)
    ][: MAX_BLOCKS - 2]
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": context_line(card)}]})
    buttons = card_buttons(card)
    if buttons:
        blocks.append({"type": "actions", "block_id": f"bcn_card_{card.key}",
                       "elements": buttons})
    return blocks


def context_line(card: Card) -> str:
    """Who asks whom, the request, its depth and until when it waits (Slack shows the time in
    each reader's own zone); once settled, what happened instead of the wait."""
    head = f"*{escape_slack(card.asker)}* asks"
    if card.requester:
        head += f" {escape_slack(card.requester)}"
    facts = [head, f"request `{escape_slack(card.request_id)}`",
             f"depth {card.depth[0]}/{card.depth[1]}"]
    if card.is_open and card.deadline is not None:
        stamp = int(card.deadline.timestamp())
        fallback = card.deadline.strftime("%H:%M UTC")
        facts.append(f"answer by <!date^{stamp}^{{time}}|{fallback}>")
    if not card.is_open:
        facts.append(escape_slack(card.outcome or f"This question has {card.state}."))
    return " · ".join(facts)


def card_buttons(card: Card) -> list[dict[str, Any]]:
    """One button per option, then own words, then Stop (with a confirmation); none once
    the card is settled. At most 12 (10 options), inside an actions block's 25."""
    elements: list[dict[str, Any]] = []
    for n, (label, data) in enumerate(card.buttons()):
        button: dict[str, Any] = {
            "type": "button", "action_id": f"{ACTION_PREFIX}{n}", "value": data,
            "text": {"type": "plain_text", "text": shorten(label, MAX_BUTTON_TEXT),
                     "emoji": False},
        }
        read = read_button_data(data)
        if read is not None and read[1] == STOP:
            button["style"] = "danger"
            button["confirm"] = {
                "title": {"type": "plain_text", "text": "Stop this request?"},
                "text": {"type": "plain_text", "text": shorten(
                    f"{card.asker}'s request {card.request_id} is closed as failed, the "
                    "same as /stop.", 300)},
                "confirm": {"type": "plain_text", "text": "Stop it"},
                "deny": {"type": "plain_text", "text": "Keep it"},
                "style": "danger",
            }
        elements.append(button)
    return elements


def text_sections(text: str) -> list[str]:
    """`text` in pieces Slack takes as section texts (3,000 characters each), cut at line
    ends where it can, a code fence cut in two closed and reopened so both pieces read
    right."""
    text = text if text.strip() else " "
    pieces: list[str] = []
    rest = text
    budget = MAX_SECTION_TEXT - 2 * (len(FENCE) + 1)  # room to close and reopen a fence
    reopen = False
    while rest:
        piece = (FENCE + "\n" if reopen else "") + rest
        if len(piece) <= MAX_SECTION_TEXT:
            pieces.append(piece)
            break
        head = rest[:budget - (len(FENCE) + 1 if reopen else 0)]
        cut = head.rfind("\n")
        head = head[:cut] if cut > len(head) // 2 else head
        rest = rest[len(head):].removeprefix("\n")
        piece = (FENCE + "\n" if reopen else "") + head
        reopen = piece.count(FENCE) % 2 == 1
        pieces.append(piece + ("\n" + FENCE if reopen else ""))
    return pieces


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def own_words_view(card: Card | None, metadata: OwnWordsMetadata) -> dict[str, Any]:
    """The modal that takes an answer in one's own words: the question, one text input."""
    question = card.question if card is not None else "Your answer"
    asker = card.asker if card is not None else "The bot"
    return {
        "type": "modal",
        "callback_id": OWN_WORDS_CALLBACK,
        "private_metadata": metadata.dump(),
        "title": {"type": "plain_text", "text": shorten(f"Answer {asker}", MAX_MODAL_TITLE)},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": shorten(
                f"*{escape_slack(asker)}* asks: {escape_slack(question)}", MAX_MODAL_TEXT)}},
            {"type": "input", "block_id": ANSWER_BLOCK,
             "label": {"type": "plain_text", "text": "Your answer"},
             "element": {"type": "plain_text_input", "action_id": ANSWER_ACTION,
                         "multiline": True, "max_length": MAX_ANSWER}},
        ],
    }


@dataclass(frozen=True, slots=True)
class OwnWordsMetadata:
    """What the modal carries to its submission: which button, in which chat and thread.

    Slack hands it back as it was set (signed in HTTP mode); the data is checked against
    the store like any button's, and the person is the submission's own user."""

    data: str
    channel: str
    thread: str | None = None

    def dump(self) -> str:
        return json.dumps({"data": self.data, "channel": self.channel, "thread": self.thread},
                          separators=(",", ":"))

    @classmethod
    def load(cls, text: object) -> OwnWordsMetadata | None:
        if not isinstance(text, str):
            return None
        try:
            value = json.loads(text)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        data, channel, thread = value.get("data"), value.get("channel"), value.get("thread")
        if not (isinstance(data, str) and isinstance(channel, str) and channel):
            return None
        return cls(data, channel, thread if isinstance(thread, str) and thread else None)


@dataclass(frozen=True, slots=True)
class Press:
    """A `block_actions` payload, read: who pressed which button where."""

    user_id: str
    user_name: str
    channel: str
    thread: str | None
    data: str
    trigger_id: str
    tap_id: str

    @property
    def wants_own_words(self) -> bool:
        read = read_button_data(self.data)
        return read is not None and read[1] == OWN_WORDS


def read_press(body: Mapping[str, Any]) -> Press | None:
    """The press a `block_actions` body describes; None when it lacks what a tap needs (a
    user, a channel, a button value), whatever its shape."""
    user, channel = _mapping(body.get("user")), _mapping(body.get("channel"))
    actions = body.get("actions")
    action = _mapping(actions[0]) if isinstance(actions, list) and actions else {}
    container = _mapping(body.get("container"))
    user_id = _text(user.get("id"))
    channel_id = _text(channel.get("id")) or _text(container.get("channel_id"))
    value = action.get("value")
    if not user_id or not channel_id or not isinstance(value, str):
        return None
    # The card's own thread: a reply's thread_ts; a thread's parent is a channel message.
    message = _mapping(body.get("message")) or {
        "ts": container.get("message_ts"), "thread_ts": container.get("thread_ts")}
    thread = thread_of(message)
    trigger = _text(body.get("trigger_id"))
    tap_id = trigger or _text(action.get("action_ts"))
    return Press(
        user_id=user_id, user_name=_text(user.get("name")) or _text(user.get("username")),
        channel=channel_id, thread=thread, data=value, trigger_id=trigger, tap_id=tap_id,
    )


@dataclass(frozen=True, slots=True)
class Submission:
    """A `view_submission` of the own-words modal, read."""

    user_id: str
    user_name: str
    metadata: OwnWordsMetadata
    text: str
    view_id: str


def read_submission(body: Mapping[str, Any]) -> Submission | None:
    """The answer an own-words modal sent; None when the body is not one."""
    user, view = _mapping(body.get("user")), _mapping(body.get("view"))
    metadata = OwnWordsMetadata.load(view.get("private_metadata"))
    values = _mapping(_mapping(view.get("state")).get("values"))
    field = _mapping(_mapping(values.get(ANSWER_BLOCK)).get(ANSWER_ACTION))
    user_id = _text(user.get("id"))
    if metadata is None or not user_id:
        return None
    value = field.get("value")
    return Submission(
        user_id=user_id, user_name=_text(user.get("name")) or _text(user.get("username")),
        metadata=metadata, text=value if isinstance(value, str) else "",
        view_id=_text(view.get("id")),
    )


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
