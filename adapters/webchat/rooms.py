"""Rooms: who is in them, what was said lately, and which requests are open.

All in memory and bounded: the last `history` messages per room, within `history_bytes`
(so a page reload shows the conversation, and a room full of long messages costs no more than
a few hundred kilobytes), a bounded memory of client message ids (so a page resending after a
reconnect does not post twice), and at most `max_rooms` rooms with anything in them. When that
many are held, a new room pushes out the one used longest ago that nobody is in, so one
visitor naming many rooms cannot lock everyone else (and the bots) out; and each room
remembers who opened it, so one visitor can hold only a few (`chat.py` enforces that).
"""

from __future__ import annotations

import logging
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from adapters.webchat.frames import encode

log = logging.getLogger(__name__)

MessageKind = Literal["human", "delta", "final", "system"]

SEEN_IDS_PER_ROOM = 500
"""Client message ids remembered per room for deduplication (resends come within seconds)."""
BOT_NAMES_PER_ROOM = 50
"""Bot names remembered per room, so a person cannot join under one (see `Room.bot_names`)."""
MESSAGE_OVERHEAD = 600
"""Bytes a history entry costs beyond its strings (the object, its fields, the dict slot)."""


class Member(Protocol):
    """One connected page; the WebSocket session implements it."""

    client_id: str
    name: str

    async def send_text(self, data: str) -> None:
        """Queue a frame for the page: never waits for it (see `writes.py`)."""


@dataclass(slots=True)
class ChatMessage:
    """One message as the page shows it: a person's plain text, or a bot's rendered HTML."""

    id: str
    room: str
    kind: MessageKind
    sender_name: str
    is_bot: bool
    text: str | None = None
    """A person's text, shown as text (never as HTML)."""
    html: str | None = None
    """A bot's or the bridge's text, already rendered to safe HTML by the core."""
    protocol: dict[str, Any] | None = None
    reply_to: str | None = None
    """The id of the room's message this one replies to, when it is a reply."""
    client_message_id: str | None = None
    run_id: str | None = None
    timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))
    edited: bool = False
    card: dict[str, Any] | None = None
    """A bot's question drawn with buttons (`bridge.core.cards.Card.view`)."""

    def footprint(self) -> int:
        """About how many bytes of memory this message holds (what `history_bytes` counts)."""
        size = MESSAGE_OVERHEAD
        for value in (self.id, self.sender_name, self.text, self.html, self.client_message_id,
                      self.run_id, self.reply_to):  # a loop, not sum(): once per message
            if value:
                size += sys.getsizeof(value)
        if self.protocol:
            size += 2 * len(encode(self.protocol))  # the parsed dict costs more than its JSON
        if self.card:
            size += 2 * len(encode(self.card))
        return size

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "room": self.room,
            "kind": self.kind,
            "sender": {"name": self.sender_name, "is_bot": self.is_bot},
            "text": self.text,
            "html": self.html,
            "protocol": self.protocol,
            "reply_to": self.reply_to,
            "client_message_id": self.client_message_id,
            "run_id": self.run_id,
            "timestamp": self.timestamp.isoformat(),
            "edited": self.edited,
            "card": self.card,
        }


class Room:
    """One chat id: its members, recent history, open requests and seen client message ids."""

    def __init__(
        self, name: str, history_size: int, history_bytes: int = 256 * 1024,
        opened_by: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.members: set[Member] = set()
        self.requests: list[dict[str, Any]] = []
        self.opened_by = opened_by
        """The visitor keys (address, connection) that opened it and count it as theirs."""
        self.bot_names: OrderedDict[str, None] = OrderedDict()
        """Names bots posted under here lately: nobody may join the room as one of them."""
        self._history_size = history_size
        self._history_bytes = history_bytes
        self._history: OrderedDict[str, ChatMessage] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self.history_used = 0
        """Bytes the history holds now (`ChatMessage.footprint` of each message)."""
        self._seen: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._not_handed_off: set[str] = set()
        """Human messages shown in the room that the bridge has not taken yet."""

    @property
    def is_idle(self) -> bool:
        """Nothing to keep: nobody here, nothing said, nothing open."""
        return not self.members and not self._history and not self.requests and not self._seen

    def history(self) -> list[ChatMessage]:
        return list(self._history.values())

    def find(self, message_id: str) -> ChatMessage | None:
        return self._history.get(message_id)

    def remember(self, message: ChatMessage) -> None:
        """Keep a message (or its newer version) for reloads; the oldest go past the limits.

        The newest message is always kept, whatever its size (one is at most the longest
        message a person or a bot may send).
        """
        if message.is_bot:
            self.bot_names[message.sender_name] = None
            self.bot_names.move_to_end(message.sender_name)
            while len(self.bot_names) > BOT_NAMES_PER_ROOM:
                self.bot_names.popitem(last=False)
        if self._history_size <= 0:
            return
        size = message.footprint()
        self.history_used += size - self._sizes.get(message.id, 0)
        self._sizes[message.id] = size
        self._history[message.id] = message
        self._history.move_to_end(message.id)
        while len(self._history) > 1 and (
            len(self._history) > self._history_size or self.history_used > self._history_bytes
        ):
            forgotten, _ = self._history.popitem(last=False)
            self.history_used -= self._sizes.pop(forgotten)

    def seen(self, client_id: str, client_message_id: str) -> str | None:
        """The message id already given to this client message, if it arrived before."""
        return self._seen.get((client_id, client_message_id))

    def mark_seen(self, client_id: str, client_message_id: str, message_id: str) -> None:
        self._seen[(client_id, client_message_id)] = message_id
        self._not_handed_off.add(message_id)
        while len(self._seen) > SEEN_IDS_PER_ROOM:
            _, forgotten = self._seen.popitem(last=False)
            self._not_handed_off.discard(forgotten)

    def awaits_hand_off(self, message_id: str) -> bool:
        """Is this message still to be handed to the bridge (a resend must try again)?"""
        return message_id in self._not_handed_off

    def handed_off(self, message_id: str) -> None:
        self._not_handed_off.discard(message_id)

    async def show(self, frame_type: Literal["message", "update"], message: ChatMessage, *,
                   skip: Member | None = None) -> None:
        """Broadcast one message frame (`message` or `update`), rendered only when someone
        but `skip` is here to get it: a person alone in a room is sent no copy of their own
        message, and a bot's reply to an empty room costs no rendering."""
        if len(self.members) > (skip in self.members):
            await self.broadcast({"type": frame_type, "message": message.to_json()}, skip=skip)

    async def broadcast(self, frame: dict[str, Any], *, skip: Member | None = None) -> None:
        """Send one frame to every member (but `skip`): queued for each page, which never
        waits for a slow one; a member whose socket fails is skipped, not fatal."""
        members = [member for member in self.members if member is not skip]
        if not members:
            return
        data = encode(frame)
        for member in members:
            try:
                await member.send_text(data)
            except Exception as error:
                log.debug("webchat: dropping a frame for %s: %s", member.name, error)


class TooManyRooms(Exception):
    """Refuse to open yet another room: rooms cost memory and anyone can name one."""


class RoomDirectory:
    """The account's rooms by name, created on first use and forgotten when idle."""

    def __init__(self, history_size: int, max_rooms: int, history_bytes: int = 256 * 1024):
        self._rooms: OrderedDict[str, Room] = OrderedDict()
        """Least recently used first."""
        self._history_size = history_size
        self._history_bytes = history_bytes
        self._max_rooms = max_rooms
        self._opened: dict[str, int] = {}
        """Rooms held now per visitor key (an address, a connection) that opened them."""

    def get(self, name: str) -> Room | None:
        return self._rooms.get(name)

    def opened_by(self, key: str) -> int:
        """How many of the rooms held now were opened by this visitor key."""
        return self._opened.get(key, 0)

    def open(self, name: str, opened_by: tuple[str, ...] = ()) -> Room:
        """The room of that name, created (and counted for `opened_by`) if it is not held."""
        room = self._rooms.get(name)
        if room is not None:
            self._rooms.move_to_end(name)
            return room
        if len(self._rooms) >= self._max_rooms:
            self._forget_least_recent_empty_room()
        room = self._rooms[name] = Room(name, self._history_size, self._history_bytes,
                                        opened_by)
        for key in opened_by:
            self._opened[key] = self._opened.get(key, 0) + 1
        return room

    def _forget_least_recent_empty_room(self) -> None:
        for name, room in self._rooms.items():
            if not room.members:
                self._drop(room)
                log.info("webchat: forgetting room %r (held %d rooms)", name, self._max_rooms)
                return
        raise TooManyRooms(f"this webchat already has {self._max_rooms} rooms in use")

    def forget_if_idle(self, room: Room) -> None:
        if room.is_idle and self._rooms.get(room.name) is room:
            self._drop(room)

    def _drop(self, room: Room) -> None:
        del self._rooms[room.name]
        for key in room.opened_by:
            left = self._opened.get(key, 0) - 1
            if left > 0:
                self._opened[key] = left
            else:
                self._opened.pop(key, None)
