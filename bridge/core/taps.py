"""What an adapter hands the core when a person taps a card's button, and what it is told.

Kept apart from `bridge.core.decisions` so that adapters (through `bridge.core.adapter`)
can name these types without importing the relay machinery that settles a tap.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.core.cards import Card
from bridge.core.model import Sender


@dataclass(frozen=True, slots=True)
class Tap:
    """A person pressed a card's button (or sent its own-words answer), as the platform
    says it happened."""

    channel_type: str
    account: str
    chat_id: str
    sender: Sender
    data: str
    roles: tuple[str, ...] = ()
    """The person's roles in the chat, where the platform has them (Discord)."""
    thread_id: str | None = None
    text: str | None = None
    """The answer in their own words, for the `own` button once its input was filled."""
    tap_id: str = ""
    """The platform's id of this interaction (a repeat of it is answered, not handled)."""

    @property
    def channel(self) -> str:
        return f"{self.channel_type}:{self.account}"


@dataclass(frozen=True, slots=True)
class TapReply:
    """What the adapter tells the person at once (privately where the platform can), and
    the card as it now stands, to redraw the tapped message without waiting."""

    text: str
    accepted: bool = False
    card: Card | None = None
    wants_own_words: bool = False
    """The `own` button without text yet: open the platform's input (a modal, a
    ForceReply prompt, the webchat's answer box) and send its text back as `Tap.text`."""
