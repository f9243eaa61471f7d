"""The small records the relay needs to handle the next message, kept in the store.

Which BCN session a chat is in (for `/stop`), which bots a group has and which are online
(for routing a protocol message to its addressee), and whether a chat may hold a question
waiting for a human: a second bridge instance — or this one after a kill -9 — handles the
next message correctly because these live in the store's message map, not in an object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from bridge.store.base import Store


@dataclass(frozen=True, slots=True)
class GroupBots:
    """A BCN group's bots as the hub last described them."""

    names: tuple[str, ...] = ()
    online: frozenset[str] = frozenset()

    def named(self, name: str) -> str | None:
        """The bot called `name` (case-insensitive, `@` optional), by its own spelling."""
        wanted = name.lstrip("@").casefold()
        return next((bot for bot in self.names if bot.casefold() == wanted), None)

    @property
    def all_online(self) -> bool:
        """Every known bot is online (and there is one): the group is back after a restart."""
        return bool(self.names) and set(self.names) <= self.online

    def listing(self) -> str:
        return ", ".join(self.names) or "none online"


class RelayState:
    def __init__(self, store: Store, clock: Callable[[], datetime]) -> None:
        self.store = store
        self.clock = clock

    # ------------------------------------------------------------------ sessions
    async def session(self, lane: str) -> str | None:
        """The BCN channel session the chat's last message went to."""
        found = await self.store.message_map.get(f"session:{lane}")
        return str(found["id"]) if found and found.get("id") else None

    async def set_session(self, lane: str, session: str) -> None:
        if await self.session(lane) != session:  # a read is cheaper than a write
            await self.store.message_map.put(f"session:{lane}", {"id": session}, self.clock())

    async def clear_session(self, lane: str) -> None:
        await self.store.message_map.put(f"session:{lane}", {}, self.clock())

    # ------------------------------------------------------------------ group bots
    async def group_bots(self, group: str) -> GroupBots:
        found = await self.store.message_map.get(f"bots:{group}") or {}
        return GroupBots(tuple(found.get("names") or ()), frozenset(found.get("online") or ()))

    async def set_group_bots(self, group: str, names: Iterable[str], online: Iterable[str]) -> None:
        await self.store.message_map.put(
            f"bots:{group}", {"names": list(names), "online": sorted(online)}, self.clock()
        )

    # ------------------------------------------------------------------ questions
    async def may_clarify(self, lane: str) -> bool:
        """Might a bot's question (CLARIFY) in this chat wait for a human? Saves a query of
        the tracker for every message in chats where no bot ever asked anything."""
        found = await self.store.message_map.get(f"clarifying:{lane}")
        return bool(found and found.get("may"))

    async def set_may_clarify(self, lane: str, may: bool) -> None:
        await self.store.message_map.put(f"clarifying:{lane}", {"may": may}, self.clock())
