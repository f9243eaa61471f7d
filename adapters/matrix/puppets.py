"""Each BCN bot as its own Matrix user: `@<puppet_prefix><name>:<server_name>`.

The user is registered in the bridge's exclusive namespace, given the bot's name as its
display name and joined to a room the first time it speaks there (the bridge user invites
it when the room is invite-only). What was done is remembered for this process only: doing
it again after a restart costs a few idempotent calls, never a duplicate message.
"""

from __future__ import annotations

import asyncio
import re

from mautrix.appservice import AppServiceAPI, IntentAPI
from mautrix.errors import MatrixRequestError

from adapters.matrix.config import MatrixAccountConfig

_NOT_ALLOWED = re.compile(r"[^a-z0-9._=/-]")


def puppet_localpart(config: MatrixAccountConfig, name: str) -> str:
    """`bcn_` + the name lowercased, other characters as `=xx` (their code point in hex),
    never the bridge user's own localpart."""
    escaped = _NOT_ALLOWED.sub(lambda m: "".join(f"={b:02x}" for b in m.group().encode()),
                               name.lower())
    localpart = config.puppet_prefix + (escaped or "_")
    return localpart + "_" if localpart == config.bot_localpart else localpart


class Puppets:
    """Virtual users by bot name, and bot names by user id."""

    def __init__(self, config: MatrixAccountConfig, api: AppServiceAPI) -> None:
        self.config = config
        self.api = api
        self._names: dict[str, str] = {}
        """user id → bot name, for the users this process made ready."""
        self._profiles: dict[str, asyncio.Task[None]] = {}
        self._joined: set[tuple[str, str]] = set()

    def user_id(self, name: str) -> str:
        return f"@{puppet_localpart(self.config, name)}:{self.config.server_name}"

    def owns(self, user_id: str) -> bool:
        """Is this user the bridge's own (its bot user or a bot's puppet)?"""
        localpart, _, server = user_id.removeprefix("@").partition(":")
        return server == self.config.server_name and (
            localpart == self.config.bot_localpart
            or localpart.startswith(self.config.puppet_prefix))

    def name_of(self, user_id: str) -> str | None:
        return self._names.get(user_id)

    def known(self) -> dict[str, str]:
        """Bot name → user id of the puppets made ready so far."""
        return {name: user_id for user_id, name in self._names.items()}

    async def intent(self, name: str, room_id: str) -> IntentAPI:
        """The bot's user, registered, named and in the room."""
        user_id = self.user_id(name)
        intent = self.api.intent(user_id)
        task = self._profiles.get(user_id)
        if task is None or (task.done() and task.exception() is not None):
            task = asyncio.ensure_future(self._profile(intent, name))
            self._profiles[user_id] = task
        await asyncio.shield(task)
        self._names[user_id] = name
        if (user_id, room_id) not in self._joined:
            await intent.ensure_joined(room_id)
            self._joined.add((user_id, room_id))
        return intent

    @staticmethod
    async def _profile(intent: IntentAPI, name: str) -> None:
        await intent.ensure_registered()
        try:
            current = await intent.get_displayname(intent.mxid)
        except MatrixRequestError:
            current = None
        if current != name:
            await intent.set_displayname(name)

    def forget_room(self, room_id: str) -> None:
        """A puppet left or was removed: join again next time."""
        self._joined = {pair for pair in self._joined if pair[1] != room_id}
