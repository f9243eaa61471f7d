"""The webchat account config, declared next to the adapter that reads it."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

ROOM_NAME = re.compile(r"^[\w.-]{1,64}$")
"""A room is a chat id in YAML bindings: letters, digits, `_`, `.`, `-`; at most 64."""
ROOM_NAME_RULE = "room names are 1-64 letters, digits, '_', '.' or '-'"


def valid_room_name(room: str) -> str:
    if not ROOM_NAME.match(room):
        raise ValueError(f"{ROOM_NAME_RULE}; {room[:80]!r} is not")
    return room


class WebchatAccountConfig(BaseModel):
    """One webchat: a page, its rooms, and how much it remembers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str = Field("bcn-bridge webchat", min_length=1, max_length=120)
    rooms: list[str] | None = Field(
        None, description="Rooms people may join; any valid room name when unset."
    )
    default_room: str = Field("lobby", description="The room the join form suggests.")
    history: int = Field(200, ge=0, le=10_000, description="Messages kept per room for reloads.")
    max_message_length: int = Field(
        4000, ge=1, le=16_000, description="Longest message a person may send, in characters."
    )
    max_name_length: int = Field(40, ge=1, le=100)
    max_rooms: int = Field(1000, ge=1, description="Rooms held in memory at once.")
    history_bytes: int = Field(
        256 * 1024, ge=1024,
        description="Memory one room's history may use (oldest messages go first), so the "
        "room cap bounds memory too: at most max_rooms × history_bytes.",
    )
    max_requests: int = Field(
        50, ge=1, le=1000, description="Open requests shown in one room's panel (newest kept)."
    )
    rooms_per_visitor: int = Field(
        20, ge=0,
        description="Rooms one IP address may open (rooms nobody had open yet; joining an "
        "open or bound room is free); 0: no limit. Behind a reverse proxy every visitor has "
        "the proxy's address: raise it there.",
    )
    rooms_per_connection: int = Field(
        10, ge=0, description="Rooms one page (one WebSocket) may open; 0: no limit."
    )
    allowed_origins: list[str] | None = Field(
        None,
        description='Origins (e.g. "https://chat.example.com") whose pages may open the '
        'WebSocket; unset: the page\'s own origin only; ["*"]: any.',
    )
    serve_at_root: bool | None = Field(
        None, description='Also serve the page at "/"; by default only the account "main" does.'
    )

    @field_validator("rooms")
    @classmethod
    def _valid_rooms(cls, rooms: list[str] | None) -> list[str] | None:
        for room in rooms or ():
            valid_room_name(room)
        return rooms

    @field_validator("default_room")
    @classmethod
    def _valid_default_room(cls, room: str) -> str:
        return valid_room_name(room)

    @field_validator("allowed_origins")
    @classmethod
    def _valid_origins(cls, origins: list[str] | None) -> list[str] | None:
        for origin in origins or ():
            if origin != "*" and not re.match(r"^https?://[^/\s]+$", origin):
                raise ValueError(
                    f'an origin is "scheme://host[:port]" with no path, or "*"; not {origin!r}')
        return origins

    def allows_room(self, room: str) -> bool:
        return bool(ROOM_NAME.match(room)) and (self.rooms is None or room in self.rooms)
