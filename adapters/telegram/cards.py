"""A bot's question as Telegram draws it: the rendered text, one line of facts, and an
inline keyboard.

Pure functions over the core's `Card`: no network, no state. The message text stays what
the core rendered; the card's facts (who asks, the depth, the time left) or, once settled,
its outcome are one more line, escaped as Telegram HTML, because a name or a question is
not markup. Each button's `callback_data` is the core's button data as it is (at most 25
bytes, inside Telegram's 64): what a tap may do is decided from the store, never here.
"""

from __future__ import annotations

import math
from datetime import datetime

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from bridge.core.cards import Card
from bridge.text import Document, Paragraph, Text, length_on, render

MAX_CALLBACK_DATA = 64
"""Telegram's limit on `callback_data`, in bytes."""

MAX_ANSWER_TEXT = 200
"""Telegram's limit on the text of `answerCallbackQuery`."""

_SETTLED_MARK = {"answered": "✅", "expired": "⌛", "closed": "⏹"}


def escaped(text: str) -> str:
    """`text` as literal Telegram HTML (a question or a name is never markup)."""
    return render(Document((Paragraph((Text(text),)),)), "telegram")


def keyboard(card: Card) -> InlineKeyboardMarkup | None:
    """The buttons of an open card: the options in rows (shorter labels share a row), then
    "own words" and Stop together on the last row. None once settled: an edit without a
    keyboard takes the old one away (an empty one is not what Telegram expects: python-
    telegram-bot sends it as `{}`)."""
    buttons = card.buttons()
    if not buttons:
        return None
    *options, own, stop = buttons
    width = row_width([label for label, _ in options])
    rows = [
        [_button(label, data) for label, data in options[start:start + width]]
        for start in range(0, len(options), width)
    ]
    rows.append([_button(*own), _button(*stop)])
    return InlineKeyboardMarkup(rows)


def row_width(labels: list[str]) -> int:
    """How many options share a row: three short ones, two middling, one long (a phone is
    narrow, and Telegram cuts a button's label rather than wrapping it)."""
    longest = max((len(label) for label in labels), default=0)
    if longest <= 10:
        return 3
    return 2 if longest <= 20 else 1


def _button(label: str, data: str) -> InlineKeyboardButton:
    if len(data.encode()) > MAX_CALLBACK_DATA:  # the core never issues one; say so loudly
        raise ValueError(f"button data over Telegram's {MAX_CALLBACK_DATA} bytes: {data!r}")
    return InlineKeyboardButton(label, callback_data=data)


def facts_line(card: Card, now: datetime) -> str:
    """One line under an open card's text, as Telegram HTML: who asks, the depth, the time
    left (as of posting: a message does not tick), and the request id a typed answer names."""
    facts = [f"❓ {card.asker} asks", f"depth {card.depth[0]}/{card.depth[1]}"]
    if card.deadline is not None:
        minutes = max(0, math.ceil((card.deadline - now).total_seconds() / 60))
        facts.append(f"{minutes} min left")
    facts.append(f"request {card.request_id}")
    return escaped(" · ".join(facts))


def outcome_line(card: Card) -> str:
    """One line under a settled card's text, as Telegram HTML: what settled it."""
    mark = _SETTLED_MARK.get(card.state, "•")
    return escaped(f"{mark} {card.outcome or f'This question has {card.state}.'}")


def card_text(text_html: str, card: Card, now: datetime, room: int) -> str:
    """The message text for `card`: the rendered text and its line of facts or outcome.

    The line is left out when it would not fit in `room` (visible units, as Telegram counts):
    the core filled the part to its limit, and the keyboard says enough by itself.
    """
    line = facts_line(card, now) if card.is_open else outcome_line(card)
    combined = f"{text_html}\n\n{line}"
    return combined if length_on(combined, "telegram") <= room else text_html


def cut(text: str, limit: int = MAX_ANSWER_TEXT) -> str:
    """At most `limit` UTF-16 units (as Telegram counts), ending in an ellipsis if cut."""
    if len(text.encode("utf-16-le")) // 2 <= limit:
        return text
    kept, used = [], 0
    for char in text:
        width = len(char.encode("utf-16-le")) // 2
        if used + width > limit - 1:
            break
        kept.append(char)
        used += width
    return "".join(kept).rstrip() + "…"
