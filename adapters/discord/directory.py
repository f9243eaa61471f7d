"""Who is who in a server, so a bot's `@Ada` becomes a real mention of Ada.

Two sources: the members discord.py caches (every member with `members_intent`; without
it, almost none) and everyone the adapter saw write or be mentioned in a message — the
people a bot is most likely to address. Each person is known by username, global name and
server nickname; when two people share a name, the name people see (nickname, then global
name) wins over a username.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import discord

from bridge.text import StaticDirectory

SEEN_PER_SERVER = 5000
"""People remembered per server from messages (least recently seen forgotten first)."""


class Person(NamedTuple):
    id: int
    username: str
    global_name: str | None
    display_name: str

    @classmethod
    def of(cls, user: discord.User | discord.Member) -> Person:
        return cls(user.id, user.name, user.global_name, user.display_name)


class ServerDirectory:
    """Names → user ids per server, for `Adapter.directory`."""

    def __init__(self, own_id: int = 0, limit: int = SEEN_PER_SERVER) -> None:
        self.own_id = own_id
        self.limit = limit
        self._seen: dict[int, OrderedDict[int, Person]] = {}
        self._built: dict[int, tuple[int, StaticDirectory]] = {}

    def saw(self, guild_id: int, users: list[discord.User | discord.Member]) -> None:
        """Remember the author and the people a message mentions."""
        seen = self._seen.setdefault(guild_id, OrderedDict())
        for user in users:
            person = Person.of(user)
            if user.id == self.own_id:
                continue
            if seen.get(person.id) != person:
                self._built.pop(guild_id, None)
            seen[person.id] = person
            seen.move_to_end(person.id)
        while len(seen) > self.limit:
            seen.popitem(last=False)

    def changed(self, guild_id: int) -> None:
        """Members joined, left or were renamed: build the directory again."""
        self._built.pop(guild_id, None)

    def for_guild(self, guild: discord.Guild) -> StaticDirectory:
        built = self._built.get(guild.id)
        if built is not None and built[0] == len(guild.members):
            return built[1]
        people = [Person.of(m) for m in guild.members if m.id != self.own_id]
        people += list(self._seen.get(guild.id, {}).values())
        ids: dict[str, str] = {}
        for field in ("username", "global_name", "display_name"):
            for person in people:
                name = getattr(person, field)
                if name:
                    ids[name] = str(person.id)
        directory = StaticDirectory(ids)
        self._built[guild.id] = (len(guild.members), directory)
        return directory
