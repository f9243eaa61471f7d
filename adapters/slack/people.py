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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.errors import CALL_ERRORS, describe

log = logging.getLogger(__name__)

USER_TOKEN = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
CHANNEL_TOKEN = re.compile(r"<#([CGD][A-Z0-9]+)(?:\|[^>]*)?>")


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
        self.ttl = ttl
        self.clock = clock
        self._people: dict[str, tuple[float, Person]] = {}
        self._channels: dict[str, tuple[float, str]] = {}
        self._failed_once = False
        self._changes = 0
        self._snapshot: tuple[int, PeopleDirectory] | None = None

    def remember(self, user: Mapping[str, Any]) -> Person | None:
        """Keep a user object an event already carried; saves a `users.info` call."""
        person = person_from(user)
        if person is not None:
            self._people[person.id] = (self.clock() + self.ttl, person)
            self._changes += 1
        return person

    async def person(self, user_id: str) -> Person | None:
        cached = self._people.get(user_id)
        if cached is not None and cached[0] > self.clock():
            return cached[1]
        try:
            response = await self._client().users_info(user=user_id)
        except CALL_ERRORS as exc:
            self._lookup_failed("users.info", user_id, exc)
            return cached[1] if cached else None
        user = response.data.get("user") if isinstance(response.data, dict) else None
        return self.remember(user) if isinstance(user, Mapping) else None

    async def name(self, user_id: str) -> str:
        person = await self.person(user_id)
        return person.name if person is not None else user_id

    async def channel_name(self, channel_id: str) -> str | None:
        cached = self._channels.get(channel_id)
        if cached is not None and cached[0] > self.clock():
            return cached[1]
        try:
            response = await self._client().conversations_info(channel=channel_id)
        except CALL_ERRORS as exc:
            self._lookup_failed("conversations.info", channel_id, exc)
            return cached[1] if cached else None
        channel = response.data.get("channel") if isinstance(response.data, dict) else None
        name = channel.get("name") if isinstance(channel, Mapping) else None
        if not name:
            return None
        self._channels[channel_id] = (self.clock() + self.ttl, str(name))
        self._changes += 1
        return str(name)

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
        if self._snapshot is not None and self._snapshot[0] == self._changes:
            return self._snapshot[1]
        people = [person for _, person in self._people.values()]
        channels = {channel_id: name for channel_id, (_, name) in self._channels.items()}
        directory = PeopleDirectory(people, channels)
        self._snapshot = (self._changes, directory)
        return directory

    def _lookup_failed(self, method: str, item: str, exc: BaseException) -> None:
        """Said once at warning level (usually a missing scope), then at debug."""
        level = logging.DEBUG if self._failed_once else logging.WARNING
        self._failed_once = True
        log.log(
            level,
            "slack:%s %s %s failed (%s); showing the id instead of a name",
            self.account, method, item, describe(exc),
        )


def _has_label(text: str, channel_id: str) -> bool:
    """`<#C0123|general>` already names the channel; `<#C0123>` and `<#C0123|>` do not."""
    return re.search(rf"<#{channel_id}\|[^>]+>", text) is not None
