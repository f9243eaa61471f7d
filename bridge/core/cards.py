"""A bot's question as a card: what every platform shows, and the data its buttons carry.

A CLARIFY posted in a chat whose adapter has buttons (`Capabilities.cards`) becomes a
`Card`: the question, who asks, the request's depth and deadline, one button per `Options:`
choice, a way to answer in one's own words, and Stop. Adapters draw it in their own terms
(an inline keyboard, an action row, a Block Kit `actions` block, the webchat's card) from
this one record, so all of them say the same thing and a change of state (answered,
expired, closed) is one new `Card` handed to each.

Button data is short and opaque — `bcn:<key>:<choice>`, at most 25 bytes, inside Telegram's
64 and Discord's 100 — and carries no meaning by itself: the key names a card record the
bridge wrote when it posted the card (`bridge.core.decisions`), so data the bridge never
issued finds nothing and is refused, and what a tap may do is decided from the store, never
from the button.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

CardState = Literal["open", "answered", "expired", "closed"]

STOP = "stop"
OWN_WORDS = "own"
"""The choices that are not options: stop the request; answer in one's own words."""

_DATA = re.compile(r"bcn:([a-z2-7]{16}):(\d|stop|own)\Z")
MAX_DATA_BYTES = 32
"""Longer than any data `button_data` writes (25 bytes at most), inside Telegram's 64."""


def card_key(lane: str, request_id: str, asked_at: str) -> str:
    """The card's key, the same on every instance and every retry of one post: derived from
    the chat lane, the request and when its CLARIFY was asked (16 base32 characters)."""
    digest = hashlib.sha256(f"{lane}\n{request_id}\n{asked_at}".encode()).digest()
    return base64.b32encode(digest[:10]).decode().lower()


def card_record_key(key: str) -> str:
    """The message-map key of the card's own record (its state)."""
    return f"card:{key}"


def card_post_key(key: str) -> str:
    """The message-map key of where the card was posted, written by the outbox in the same
    store write that marks the post sent (so a redraw finds every card that reached a chat)."""
    return f"card-post:{key}"


def requester_key(lane: str, request_id: str) -> str:
    """The message-map key of who started a request from a chat (`/ask`): their platform id,
    for `answers: requester`."""
    return f"requester:{lane}\n{request_id}"


def button_data(key: str, choice: int | str) -> str:
    """What one button carries: `bcn:<key>:<n>` for option n, `:stop`, or `:own`."""
    return f"bcn:{key}:{choice}"


def read_button_data(data: object) -> tuple[str, str] | None:
    """`(key, choice)` from button data, or None for anything the bridge would not issue
    (any type, any length, any text: a forged payload is answered, never raised on)."""
    if not isinstance(data, str) or len(data) > MAX_DATA_BYTES:
        return None
    match = _DATA.match(data)
    return (match[1], match[2]) if match else None


@dataclass(frozen=True, slots=True)
class Card:
    """One CLARIFY as every chat that shows it draws it."""

    key: str
    decision: str
    """What a tap settles, shared by every card of this one question wherever it shows:
    the first answer to it wins, once, across chats and instances."""
    request_id: str
    question: str
    asker: str
    requester: str
    requester_id: str | None
    """The platform id of the person whose request it is (their `/ask`); None when a bot
    asked for it."""
    depth: tuple[int, int]
    deadline: datetime | None
    options: tuple[str, ...] = ()
    state: CardState = "open"
    outcome: str = ""
    """Once not open: what happened, e.g. "answered by Ada (telegram): Yes"."""
    lane: str = ""
    """The chat lane it is shown in (its own card: the same question in another chat is
    another card with the same `decision`)."""

    @property
    def is_open(self) -> bool:
        return self.state == "open"

    def settled(self, state: CardState, outcome: str) -> Card:
        return replace(self, state=state, outcome=outcome)

    def buttons(self) -> list[tuple[str, str]]:
        """(label, data) of each button while the card is open, in the order shown: the
        options, then "Answer in my own words", then Stop. None once it is settled."""
        if not self.is_open:
            return []
        shown = [(option, button_data(self.key, n)) for n, option in enumerate(self.options)]
        shown.append(("Answer in my own words", button_data(self.key, OWN_WORDS)))
        shown.append(("Stop", button_data(self.key, STOP)))
        return shown

    def summary(self, now: datetime | None = None) -> str:
        """The card as plain lines: platforms without rich layout show this text."""
        head = f"{self.asker} asks: {self.question}"
        facts = [f"request {self.request_id}", f"depth {self.depth[0]}/{self.depth[1]}"]
        if self.is_open and self.deadline is not None and now is not None:
            left = max(0, int((self.deadline - now).total_seconds()))
            facts.append(f"{left // 60}:{left % 60:02d} left")
        lines = [head, " · ".join(facts)]
        if self.is_open and self.options:
            lines.append("Choices: " + " | ".join(self.options))
        if not self.is_open:
            lines.append(self.outcome)
        return "\n".join(lines)

    def to_record(self) -> dict[str, Any]:
        return {
            "key": self.key, "decision": self.decision, "request_id": self.request_id,
            "question": self.question, "asker": self.asker, "requester": self.requester,
            "requester_id": self.requester_id, "depth": list(self.depth),
            "deadline": self.deadline.isoformat() if self.deadline else None,
            "options": list(self.options), "state": self.state, "outcome": self.outcome,
            "lane": self.lane,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Card:
        deadline = record.get("deadline")
        return cls(
            key=record["key"], decision=record["decision"], request_id=record["request_id"],
            question=record["question"], asker=record["asker"],
            requester=record["requester"], requester_id=record.get("requester_id"),
            depth=tuple(record["depth"]),  # type: ignore[arg-type]
            deadline=datetime.fromisoformat(deadline) if deadline else None,
            options=tuple(record.get("options") or ()), state=record.get("state", "open"),
            outcome=record.get("outcome", ""), lane=record.get("lane", ""),
        )

    def view(self) -> dict[str, Any]:
        """The card as JSON for a page (the webchat, the dashboard): what to draw, and each
        button's data with its role (`option`, `own`, `stop`). Nothing in it is trusted
        back: a press names data, checked against the store."""
        buttons = []
        for label, data in self.buttons():
            choice = data.rsplit(":", 1)[-1]
            buttons.append({"label": label, "data": data,
                            "role": choice if choice in (STOP, OWN_WORDS) else "option"})
        return {
            "key": self.key, "state": self.state, "question": self.question,
            "asker": self.asker, "requester": self.requester, "request_id": self.request_id,
            "depth": {"current": self.depth[0], "max": self.depth[1]},
            "deadline": self.deadline.isoformat() if self.deadline else None,
            "options": list(self.options), "buttons": buttons, "outcome": self.outcome,
        }
