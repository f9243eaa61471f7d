"""The webchat's conversation logic, between the WebSocket sessions and the adapter.

Joining, posting, editing and the request panel live here so that the socket code only
translates frames and the adapter only translates core messages; neither knows about rooms.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Any

from adapters.webchat.config import ROOM_NAME, ROOM_NAME_RULE, WebchatAccountConfig
from adapters.webchat.frames import FrameError
from adapters.webchat.rooms import ChatMessage, Member, Room, RoomDirectory, TooManyRooms
from adapters.webchat.visitors import Visitor, distinct_name
from bridge import random_ids
from bridge.text.lookalike import skeleton

try:
    from bridge.protocol import parse as parse_protocol
except ImportError:  # a webchat without the text protocol shows no card for people
    parse_protocol = None


def clean_display_name(name: str, max_length: int) -> str:
    """Collapse whitespace and drop control/format characters; `FrameError` if nothing is left."""
    visible = "".join(
        " " if char.isspace() else char
        for char in name
        if char.isspace() or unicodedata.category(char)[0] != "C"
    )
    cleaned = " ".join(visible.split())
    if not cleaned:
        raise FrameError("bad_name", "pick a display name")
    if len(cleaned) > max_length:
        raise FrameError("bad_name", f"display names are at most {max_length} characters")
    return cleaned


def refuse_bot_name(name: str, bots: Iterable[str]) -> None:
    """`FrameError` when `name` looks like one of `bots` (`skeleton`: case, accents,
    invisible characters and look-alike letters from other alphabets do not count)."""
    shape = skeleton(name)
    for bot in bots:
        if skeleton(bot) == shape:
            raise FrameError(
                "bot_name",
                f"{bot} is a bot in this room; people cannot use its name (or one that looks "
                "like it), so pick another display name",
            )


def protocol_of(text: str) -> dict[str, Any] | None:
    """The protocol block a person typed, for the card; None when there is none.

    Uses `bridge.protocol` when it is installed with this bridge; without it people's
    messages simply show no card (bots' cards come from the core's `Outbound.protocol`).
    Imported once, with the module: an import in here cost more than the parse.
    """
    if parse_protocol is None:
        return None
    message = parse_protocol(text)
    return message.to_dict() if message is not None else None


class Webchat:
    """One webchat account's rooms and what happens in them."""

    def __init__(self, config: WebchatAccountConfig) -> None:
        self.config = config
        self.rooms = RoomDirectory(config.history, config.max_rooms, config.history_bytes)
        self.bound_rooms: frozenset[str] | None = None
        """Rooms bound to a BCN group, when the bridge has said; the page hints at the rest."""
        self.room_groups: dict[str, frozenset[str]] = {}
        """room -> the BCN groups it is bound to (from the bindings)."""
        self.group_bots: dict[str, tuple[str, ...]] = {}
        """group -> its bots, as the hub last listed them (`set_group_bots`)."""

    def hello(self) -> dict[str, Any]:
        return {
            "type": "hello",
            "title": self.config.title,
            "rooms": self.suggested_rooms(),
            "default_room": self.config.default_room,
            "max_message_length": self.config.max_message_length,
            "max_name_length": self.config.max_name_length,
        }

    def suggested_rooms(self) -> list[str]:
        if self.config.rooms is not None:
            return list(self.config.rooms)
        return sorted(self.bound_rooms or ())

    def set_bound_rooms(self, rooms: Iterable[str] | None) -> None:
        self.bound_rooms = None if rooms is None else frozenset(rooms)

    def set_room_groups(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Which BCN group each bound room reaches, as (room, group) pairs."""
        groups: dict[str, set[str]] = {}
        for room, group in pairs:
            groups.setdefault(room, set()).add(group)
        self.room_groups = {room: frozenset(found) for room, found in groups.items()}

    def set_group_bots(self, group: str, names: Iterable[str]) -> None:
        self.group_bots[group] = tuple(names)

    def bot_names(self, room: Room | str) -> list[str]:
        """Names no person may join `room` under: every bot of the groups it is bound to
        (whether or not it has spoken yet), and any bot that posted in it lately."""
        name = room if isinstance(room, str) else room.name
        names = [bot for group in sorted(self.room_groups.get(name, ()))
                 for bot in self.group_bots.get(group, ())]
        shown = self.rooms.get(name) if isinstance(room, str) else room
        if shown is not None:
            names += shown.bot_names
        return names

    def is_bound(self, room: str) -> bool | None:
        return None if self.bound_rooms is None else room in self.bound_rooms

    def check_room(self, room: str) -> None:
        if not ROOM_NAME.match(room):
            raise FrameError("bad_room", ROOM_NAME_RULE)
        if not self.config.allows_room(room):
            raise FrameError("room_not_allowed", f"there is no room {room!r} on this webchat")

    def join(
        self, member: Member, room_name: str, current: Room | None, name: str,
        visitor: Visitor,
    ) -> tuple[Room, str]:
        """Move `member` into a room (leaving `current` first); the room and the name it has
        there, told apart from everyone else's in it (`distinct_name`).

        A name that looks like a bot's of this room is refused, not numbered: "Echo (2)"
        would still read as the bot.
        """
        self.check_room(room_name)
        refuse_bot_name(name, self.bot_names(room_name))
        opened_by: tuple[str, ...] = ()
        if self.rooms.get(room_name) is None and not self._operators_room(room_name):
            self._check_rooms_of(visitor)
            opened_by = (visitor.address_key, visitor.connection_key)
        try:
            room = self.rooms.open(room_name, opened_by)
        except TooManyRooms as error:
            raise FrameError("too_many_rooms", str(error)) from None
        if current is not None and current is not room:
            self.leave(member, current)
        others = [other.name for other in room.members
                  if other is not member and other.client_id != member.client_id]
        shown = distinct_name(name, others, self.config.max_name_length)
        room.members.add(member)
        return room, shown

    def _operators_room(self, room: str) -> bool:
        """A room the config names (allow-list or binding): opening it costs nobody."""
        return self.config.rooms is not None or bool(self.is_bound(room))

    def _check_rooms_of(self, visitor: Visitor) -> None:
        """Refuse a new room to a visitor who holds its share already."""
        limits = (
            (visitor.address_key, self.config.rooms_per_visitor, "from your address"),
            (visitor.connection_key, self.config.rooms_per_connection, "from this page"),
        )
        for key, limit, where in limits:
            if limit and self.rooms.opened_by(key) >= limit:
                raise FrameError(
                    "too_many_rooms",
                    f"{limit} rooms opened {where} are still held on this webchat; join one "
                    "of those or a room others use (rooms are freed as they fall idle)",
                )

    def joined_frame(self, member: Member, room: Room) -> dict[str, Any]:
        return {
            "type": "joined",
            "room": room.name,
            "name": member.name,
            "bound": self.is_bound(room.name),
            "history": [message.to_json() for message in room.history()],
            "requests": room.requests,
        }

    def leave(self, member: Member, room: Room) -> None:
        room.members.discard(member)
        self.rooms.forget_if_idle(room)

    async def post_human(
        self, member: Member, room: Room, client_message_id: str, text: str,
        reply_to: str | None = None,
    ) -> tuple[ChatMessage, bool]:
        """Record and broadcast a person's message once; a resend returns the first copy.

        Returns the message and whether it is new (only new messages go on to the bots).
        The sender is not sent the broadcast: its `ack` carries the message (one frame
        instead of two for every message a page sends).
        """
        if not text.strip():
            raise FrameError(
                "empty", "empty messages are not sent", client_message_id=client_message_id
            )
        limit = self.config.max_message_length
        if len(text) > limit:
            raise FrameError(
                "too_long",
                f"messages are at most {limit} characters; this one has {len(text)}",
                client_message_id=client_message_id,
            )
        known_id = room.seen(member.client_id, client_message_id)
        if known_id is not None:
            known = room.find(known_id)
            if known is not None:
                return known, False
            return self._human_message(member, room, client_message_id, text, known_id,
                                       reply_to), False
        message = self._human_message(member, room, client_message_id, text,
                                      random_ids.token_hex(16), reply_to)
        room.mark_seen(member.client_id, client_message_id, message.id)
        room.remember(message)
        await room.show("message", message, skip=member)
        return message, True

    def _human_message(
        self, member: Member, room: Room, client_message_id: str, text: str, message_id: str,
        reply_to: str | None = None,
    ) -> ChatMessage:
        return ChatMessage(
            id=message_id,
            room=room.name,
            kind="human",
            sender_name=member.name,
            is_bot=False,
            text=text,
            protocol=protocol_of(text),
            # Only a message the room still holds can be replied to (not an id a page made up).
            reply_to=reply_to if reply_to is not None and room.find(reply_to) else None,
            client_message_id=client_message_id,
        )

    async def post(self, message: ChatMessage) -> None:
        """Show a bot's or the bridge's message to everyone in its room."""
        room = self.rooms.open(message.room)
        room.remember(message)
        await room.show("message", message)

    async def replace(self, message: ChatMessage) -> None:
        """Replace a shown message in place: a streaming reply's next version, or a finished
        message changed afterwards — only that counts as edited (a stream is not an edit,
        nor a question card redrawn with its outcome: the words stayed the same)."""
        room = self.rooms.open(message.room)
        previous = room.find(message.id)
        message.edited = previous is not None and (
            previous.edited or (previous.kind == "final"
                                and (previous.text, previous.html) != (message.text, message.html)))
        room.remember(message)
        await room.show("update", message)

    async def set_requests(self, room_name: str, items: list[dict[str, Any]]) -> None:
        room = self.rooms.open(room_name)
        room.requests = list(items[: self.config.max_requests])
        await room.broadcast({"type": "requests", "room": room_name, "items": room.requests})
        self.rooms.forget_if_idle(room)
