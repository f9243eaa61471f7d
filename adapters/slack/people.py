"""Names of a workspace's people and channels, and the `Directory` built from them.

Slack events carry ids (`U0123`, `<@U0123>`, `<#C0123>`); people read names. Names come from
`users.info` / `conversations.info` (or the `user_profile` some events carry) and are kept in
memory for `ttl` seconds: they are a cache of platform data, rebuilt after a restart, never
relay state. A lookup that fails (rate limit, a user from another workspace) leaves the id in
place for that message instead of holding the message back.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from adapters.slack.errors import CALL_ERRORS, describe

log = logging.getLogger(__name__)

USER_TOKEN = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
CHANNEL_TOKEN = re.compile(r"<#([CGD][A-Z0-9]+)(?:\|[^>]*)?>")

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Person:
    """One Slack user: the name to show and every name people may address them by."""

    id: str
    name: str
    aliases: tuple[str, ...]
    is_bot: bool = False


def person_from(user: Mapping[str, Any]) -> Person | None:
    """A `users.info` user (or a message's `user_profile`): display name > real name > name."""
    user_id = str(user.get("id") or "")
    if not user_id:
        return None
    profile = user.get("profile") if isinstance(user.get("profile"), Mapping) else user
    candidates = [
        profile.get("display_name"),
        profile.get("real_name"),
        user.get("real_name"),
        user.get("name"),
    ]
    names = [str(name).strip() for name in candidates if name and str(name).strip()]
    if not names:
        return None
    return Person(
        user_id, names[0], tuple(dict.fromkeys(names)), bool(user.get("is_bot", False))
    )


class PeopleDirectory:
    """A `bridge.text.Directory` over what `People` knows right now (names case-insensitive)."""

    def __init__(self, people: Iterable[Person], channels: Mapping[str, str]) -> None:
        self._names = {person.id: person.name for person in people}
        self._names.update(channels)
        self._ids: dict[str, str] = {}
        for person in people:
            for alias in person.aliases:
                self._ids.setdefault(alias.casefold(), person.id)

    def id_for(self, name: str) -> str | None:
        return self._ids.get(name.lstrip("@").casefold())

    def name_for(self, platform_id: str) -> str | None:
        return self._names.get(platform_id)


class _Expiring(Generic[V]):
    """Values that count as fresh for `ttl` seconds; a stale one still beats nothing."""

    def __init__(self, ttl: float, clock: Callable[[], float]) -> None:
        self.ttl = ttl
        self.clock = clock
        self.changes = 0
        self._items: dict[str, tuple[float, V]] = {}

    def fresh(self, key: str) -> V | None:
        found = self._items.get(key)
        return found[1] if found is not None and found[0] > self.clock() else None

    def stale(self, key: str) -> V | None:
        found = self._items.get(key)
        return found[1] if found is not None else None

    def put(self, key: str, value: V) -> V:
        self._items[key] = (self.clock() + self.ttl, value)
        self.changes += 1
        return value

    def items(self) -> list[tuple[str, V]]:
        return [(key, value) for key, (_, value) in self._items.items()]


class People:
    """The user and channel names one Slack account has looked up, refreshed after `ttl` s."""

    def __init__(
        self,
        client: Callable[[], AsyncWebClient],
        account: str,
        *,
        ttl: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self.account = account
        self._people: _Expiring[Person] = _Expiring(ttl, clock)
        self._channels: _Expiring[str] = _Expiring(ttl, clock)
        self._failed_once = False
        self._snapshot: tuple[tuple[int, int], PeopleDirectory] | None = None

    def remember(self, user: Mapping[str, Any]) -> Person | None:
        """Keep a user object an event already carried; saves a `users.info` call."""
        person = person_from(user)
        return self._people.put(person.id, person) if person is not None else None

    async def person(self, user_id: str) -> Person | None:
        if (known := self._people.fresh(user_id)) is not None:
            return known
        data = await self._fetch("users.info", user_id, lambda client: client.users_info(
            user=user_id))
        user = data.get("user") if data is not None else None
        person = person_from(user) if isinstance(user, Mapping) else None
        if person is None:
            return self._people.stale(user_id)
        return self._people.put(user_id, person)

    async def channel_name(self, channel_id: str) -> str | None:
        if (known := self._channels.fresh(channel_id)) is not None:
            return known
        data = await self._fetch("conversations.info", channel_id, lambda client: (
            client.conversations_info(channel=channel_id)))
        channel = data.get("channel") if data is not None else None
        name = channel.get("name") if isinstance(channel, Mapping) else None
        if not name:
            return self._channels.stale(channel_id)
        return self._channels.put(channel_id, str(name))

    async def _fetch(
        self,
        method: str,
        item: str,
        call: Callable[[AsyncWebClient], Awaitable[AsyncSlackResponse]],
    ) -> Mapping[str, Any] | None:
        """One lookup's answer; None when it failed (said once at warning level, usually a
        missing scope, then at debug)."""
        try:
            response = await call(self._client())
        except CALL_ERRORS as exc:
            level = logging.DEBUG if self._failed_once else logging.WARNING
            self._failed_once = True
            log.log(
                level,
                "slack:%s %s %s failed (%s); showing the id instead of a name",
                self.account, method, item, describe(exc),
            )
            return None
        return response.data if isinstance(response.data, dict) else None

    async def learn_text(self, text: str) -> None:
        """Look up every user and channel a message's `<@U…>` / `<#C…>` tokens name."""
        for user_id in dict.fromkeys(USER_TOKEN.findall(text)):
            await self.person(user_id)
        for channel_id in dict.fromkeys(CHANNEL_TOKEN.findall(text)):
            if not _has_label(text, channel_id):
                await self.channel_name(channel_id)

    def directory(self) -> PeopleDirectory:
        """Everyone known, as a Directory; rebuilt only after something new was learnt (the
        core asks for it on every streamed preview)."""
        version = (self._people.changes, self._channels.changes)
        if self._snapshot is not None and self._snapshot[0] == version:
            return self._snapshot[1]
        people = [person for _, person in self._people.items()]
        directory = PeopleDirectory(people, dict(self._channels.items()))
        self._snapshot = (version, directory)
        return directory


def _has_label(text: str, channel_id: str) -> bool:
    """`<#C0123|general>` already names the channel; `<#C0123>` and `<#C0123|>` do not."""
    return re.search(rf"<#{channel_id}\|[^>]+>", text) is not None
