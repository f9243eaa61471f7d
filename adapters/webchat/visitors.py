"""Who a page is: a client id the server issues, and a name nobody else in the room has.

The client id is what bots see as the person's `user_id` (and what the hub derives the
person's pseudonym from), so a page must not choose it: a visitor could otherwise speak as
anyone whose id it has seen. The server issues `w-<random>.<signature>` in its `hello`; the
page keeps it (localStorage) and presents it when it joins, so a reloaded page is the same
person and its resends are still recognised as resends. A presented id without this server's
signature is ignored and the page gets a fresh one. The signature key lives as long as the
process: after a restart pages get new ids (the rooms, kept in memory, are new too).

Display names are the person's own choice, but within a room they must be told apart: a
second "Ada", or "Αda" with a Greek Alpha, is shown as "Ada (2)". A bot's name (or one that
looks like it) is not numbered but refused (`chat.refuse_bot_name`): "Echo (2)" would still
read as the bot.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from bridge.text.lookalike import skeleton
from bridge.web.signing import signature

ID_PREFIX = "w-"
ID_CONTEXT = "webchat-client-id"
"""What the signature covers besides the id, so no other signed value passes for one."""


@dataclass(frozen=True, slots=True)
class Visitor:
    """Where a page connects from: what the rooms-per-visitor limits count by."""

    address: str
    connection: int

    @property
    def address_key(self) -> str:
        return f"address:{self.address}"

    @property
    def connection_key(self) -> str:
        return f"connection:{self.connection}"


class ClientIds:
    """Issues and checks the page ids of one webchat account."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)

    def _sign(self, user_id: str) -> str:
        return signature(f"{ID_CONTEXT}/{user_id}", 0, self._key)

    def issue(self) -> str:
        """A new page id, as the page keeps and presents it (`<user id>.<signature>`)."""
        user_id = ID_PREFIX + secrets.token_hex(16)
        return f"{user_id}.{self._sign(user_id)}"

    def user_id(self, presented: str | None) -> str | None:
        """The user id of an id this server issued; None for anything else."""
        if not presented:
            return None
        user_id, dot, sig = presented.partition(".")
        if not dot or not user_id.startswith(ID_PREFIX):
            return None
        if not secrets.compare_digest(self._sign(user_id), sig):
            return None
        return user_id


def distinct_name(wanted: str, taken: Iterable[str], max_length: int) -> str:
    """`wanted`, or `wanted (2)`, `(3)`… — the first that looks like none of `taken`."""
    shapes = {skeleton(name) for name in taken}
    if skeleton(wanted) not in shapes:
        return wanted
    number = 2
    while True:
        suffix = f" ({number})"
        candidate = wanted[: max(1, max_length - len(suffix))].rstrip() + suffix
        if skeleton(candidate) not in shapes:
            return candidate
        number += 1
