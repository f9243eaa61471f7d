"""A bot's question as the page draws it, and a press on one of its buttons.

The page gets a plain JSON view of the core's `Card` (`card_view`): the question, who asks,
the request, its depth and deadline, and the buttons as (label, data) while it is open, or
what settled it. A press comes back as a `tap` frame carrying the button's data; the
adapter turns it into the core's `Tap` with the session's own member as the person, so a
page can name any data it likes and still only ever answer as itself.
"""

from __future__ import annotations

from typing import Any

from bridge.core.cards import OWN_WORDS, STOP, Card, read_button_data


def card_view(card: Card) -> dict[str, Any]:
    """What the page needs to draw `card` (and nothing it could act on by itself: each
    button's data is checked against the store when pressed)."""
    buttons = []
    for label, data in card.buttons():
        read = read_button_data(data)
        role = read[1] if read is not None and read[1] in (STOP, OWN_WORDS) else "option"
        buttons.append({"label": label, "data": data, "role": role})
    return {
        "key": card.key,
        "state": card.state,
        "question": card.question,
        "asker": card.asker,
        "requester": card.requester,
        "request_id": card.request_id,
        "depth": {"current": card.depth[0], "max": card.depth[1]},
        "deadline": card.deadline.isoformat() if card.deadline else None,
        "buttons": buttons,
        "outcome": card.outcome,
    }
