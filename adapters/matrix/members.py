"""Who is who in each room: display names by user id, and a `Directory` for mentions.

Filled from the `m.room.member` events the homeserver pushes and, for a sender not seen
yet, from the room's state. A cache, not state: any instance rebuilds it from the room.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

ROOMS_REMEMBERED = 2_000


class Members:
    def __init__(self) -> None:
        self._rooms: OrderedDict[str, dict[str, str]] = OrderedDict()

    def _room(self, room_id: str) -> dict[str, str]:
        room = self._rooms.get(room_id)
        if room is None:
            room = self._rooms[room_id] = {}
            while len(self._rooms) > ROOMS_REMEMBERED:
                self._rooms.popitem(last=False)
        return room

    def name(self, room_id: str, user_id: str) -> str | None:
        return self._rooms.get(room_id, {}).get(user_id)

    def remember(self, room_id: str, user_id: str, name: str | None) -> None:
        self._room(room_id)[user_id] = name or localpart(user_id)

    def forget(self, room_id: str, user_id: str) -> None:
        self._rooms.get(room_id, {}).pop(user_id, None)

    def on_member_event(self, event: dict[str, Any]) -> None:
        content = event.get("content") or {}
        user_id, room_id = event.get("state_key"), event.get("room_id")
        if not isinstance(user_id, str) or not isinstance(room_id, str):
            return
        if content.get("membership") == "join":
            name = content.get("displayname")
            self.remember(room_id, user_id, name if isinstance(name, str) else None)
        elif content.get("membership") in ("leave", "ban"):
            self.forget(room_id, user_id)

    def ids_by_name(self, room_id: str) -> dict[str, str]:
        return {name: user_id for user_id, name in self._rooms.get(room_id, {}).items()}


def localpart(user_id: str) -> str:
    return user_id.removeprefix("@").partition(":")[0]
