"""Who the bots are: identities (uuid, name, token) that persist in `hub.db`.

Tokens are stored as SHA-256 hashes: they are long random strings, so a plain hash is
enough to make a leaked database useless for impersonation, and a lookup stays one
dictionary access. The registry keeps every record in memory; it only writes when a bot
registers or a pre-provisioned identity changes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from bridge.hub.config import BotConfig, check_bot_name
from bridge.hub.storage import HubDatabase
from bridge.text.lookalike import skeleton

log = logging.getLogger(__name__)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return "tok-" + secrets.token_urlsafe(24)


BOT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
"""What a preconfigured `bot_id` may look like (a stable, log-safe identifier)."""


class NameTaken(ValueError):
    """A new bot asked for a name another bot already has."""


class NameLooksTaken(NameTaken):
    """A new bot asked for a name that cannot be told apart from another bot's ("Ru1es")."""


class BotIdTaken(ValueError):
    """A new bot asked for a preconfigured `bot_id` that already belongs to a bot."""


@dataclass(slots=True)
class BotRecord:
    bot_uuid: str
    name: str
    provisioned: bool
    created_at: float
    profile: dict[str, object] | None = None
    """The descriptor the bot onboarded with (summary, domains, skills, scopes)."""
    connected_at: float | None = None
    """When the bot first connected to `/ws/bot`; None while it never has."""


class BotRegistry:
    def __init__(self, db: HubDatabase) -> None:
        self._db = db
        self._by_uuid: dict[str, BotRecord] = {}
        self._by_hash: dict[str, str] = {}
        self._by_name: dict[str, str] = {}
        self._by_look: dict[str, str] = {}
        """`skeleton(name)` → the name that looks that way (bots', and names config lists)."""
        self._never_connected: dict[str, float] = {}
        """Registered bots that never connected, oldest first (what `reap` may forget)."""
        for row in db.rows(
            "SELECT bot_uuid, name, token_hash, provisioned, created_at, connected_at FROM bots"
            " ORDER BY created_at"
        ):
            record = BotRecord(row[0], row[1], bool(row[3]), row[4], connected_at=row[5])
            self._remember(record, row[2])
        for bot_uuid, descriptor in db.rows("SELECT bot_uuid, descriptor FROM bot_profiles"):
            record = self._by_uuid.get(bot_uuid)
            if record is not None:
                record.profile = json.loads(descriptor)

    def _remember(self, record: BotRecord, token_hash: str) -> None:
        self._by_uuid[record.bot_uuid] = record
        self._by_hash[token_hash] = record.bot_uuid
        self._by_name[record.name.casefold()] = record.bot_uuid
        self._by_look.setdefault(skeleton(record.name), record.name)
        if record.connected_at is None and not record.provisioned:
            self._never_connected[record.bot_uuid] = record.created_at

    def _forget(self, record: BotRecord) -> None:
        self._by_uuid.pop(record.bot_uuid, None)
        self._by_hash = {h: u for h, u in self._by_hash.items() if u != record.bot_uuid}
        if self._by_name.get(record.name.casefold()) == record.bot_uuid:
            del self._by_name[record.name.casefold()]
        look = skeleton(record.name)
        if self._by_look.get(look) == record.name:
            del self._by_look[look]
        self._never_connected.pop(record.bot_uuid, None)

    def reserve(self, names: list[str]) -> None:
        """Names config lists for bots that may register later: nobody else may look like them.

        The exact name stays open to its bot (that is how a listed bot joins its group).
        """
        for name in names:
            self._by_look.setdefault(skeleton(name), name)

    def provision(self, bots: list[BotConfig]) -> list[BotRecord]:
        """Make sure each configured identity exists with its configured token.

        An existing bot of that name keeps its uuid (so group membership and bots'
        local histories survive) and takes the configured token.
        """
        records = []
        for bot in bots:
            token_hash = hash_token(bot.token)
            record = self.by_name(bot.name)
            holder = self._by_hash.get(token_hash)
            if holder is not None and (record is None or holder != record.bot_uuid):
                # The token now belongs to this configured name (a renamed or re-assigned
                # identity): the bot that held it must not keep logging in with it.
                self._set_token_hash(holder, hash_token(new_token()))
                log.warning("bot token moved to %r by config; %r must reconnect with a new one",
                            bot.name, self._by_uuid[holder].name)
            if record is None:
                record = self._insert(bot.name, token_hash, provisioned=True)
            else:
                record.provisioned = True
                self._never_connected.pop(record.bot_uuid, None)
                self._set_token_hash(record.bot_uuid, token_hash)
            records.append(record)
        return records

    def _set_token_hash(self, bot_uuid: str, token_hash: str) -> None:
        self._by_hash = {h: u for h, u in self._by_hash.items() if u != bot_uuid}
        self._by_hash[token_hash] = bot_uuid
        self._db.write(
            "UPDATE bots SET token_hash = ?, provisioned = ? WHERE bot_uuid = ?",
            (token_hash, int(self._by_uuid[bot_uuid].provisioned), bot_uuid),
        )

    def register(
        self, name: str | None, bot_uuid: str | None = None
    ) -> tuple[BotRecord, str]:
        """Create a new bot; returns its record and its token (the only time it is known).

        `bot_uuid` is a preconfigured id the bot asked for (`bot.connect` `bot_id`).
        """
        token = new_token()
        if bot_uuid is None:
            bot_uuid = "bot-" + uuid.uuid4().hex
        elif not BOT_ID.fullmatch(bot_uuid):
            raise ValueError("bot_id must be 1-128 characters of [A-Za-z0-9._:-]")
        elif bot_uuid in self._by_uuid:
            raise BotIdTaken(f"bot_id {bot_uuid!r} is registered; connect with its token")
        if name is None:
            name = f"bot-{uuid.uuid4().hex[:8]}"
        name = check_bot_name(name)
        holder = self.by_name(name)
        if holder is not None:
            by = "" if holder.name == name else f" (by the bot {holder.name!r})"
            raise NameTaken(f"the name {name!r} is taken{by}; reconnect with that bot's token")
        look_alike = self._by_look.get(skeleton(name))
        if look_alike is not None and look_alike.casefold() != name.casefold():
            raise NameLooksTaken(
                f"the name {name!r} looks like the bot {look_alike!r} (same letters once case, "
                "accents, look-alike characters and separators are ignored); pick a clearly "
                "different name")
        return self._insert(name, hash_token(token), provisioned=False, bot_uuid=bot_uuid), token

    def connected(self, record: BotRecord) -> None:
        """The bot is on `/ws/bot`: the first time, remember it (it is no longer reapable)."""
        if record.connected_at is not None:
            return
        record.connected_at = time.time()
        self._never_connected.pop(record.bot_uuid, None)
        self._db.write("UPDATE bots SET connected_at = ? WHERE bot_uuid = ?",
                       (record.connected_at, record.bot_uuid))

    def reap(self, registered_before: float) -> list[BotRecord]:
        """Forget bots registered before then that never connected (their tokens end).

        Registrations are cheap for anyone who can reach the hub; ones nobody ever used
        would otherwise be kept, listed and announced forever. Provisioned bots are kept.
        """
        old = []
        for bot_uuid, created_at in self._never_connected.items():
            if created_at >= registered_before:
                break
            old.append(self._by_uuid[bot_uuid])
        if not old:
            return []
        self._db.write_all([
            (f"DELETE FROM {table} WHERE bot_uuid = ?", (record.bot_uuid,))
            for record in old for table in ("bots", "bot_profiles", "group_members")
        ])
        for record in old:
            self._forget(record)
        return old

    def onboard(self, record: BotRecord, descriptor: dict[str, object]) -> None:
        """Keep the descriptor a bot onboarded with (replacing an earlier one)."""
        self._db.write(
            "INSERT OR REPLACE INTO bot_profiles (bot_uuid, descriptor, onboarded_at)"
            " VALUES (?, ?, ?)",
            (record.bot_uuid, json.dumps(descriptor), time.time()),
        )
        record.profile = descriptor

    def _insert(
        self, name: str, token_hash: str, *, provisioned: bool, bot_uuid: str | None = None
    ) -> BotRecord:
        record = BotRecord(bot_uuid or "bot-" + uuid.uuid4().hex, name, provisioned, time.time())
        self._db.write(
            "INSERT INTO bots (bot_uuid, name, token_hash, provisioned, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (record.bot_uuid, name, token_hash, int(provisioned), record.created_at),
        )
        self._remember(record, token_hash)
        return record

    def by_token(self, token: str) -> BotRecord | None:
        bot_uuid = self._by_hash.get(hash_token(token))
        return None if bot_uuid is None else self._by_uuid.get(bot_uuid)

    def by_uuid(self, bot_uuid: str) -> BotRecord | None:
        return self._by_uuid.get(bot_uuid)

    def by_name(self, name: str) -> BotRecord | None:
        bot_uuid = self._by_name.get(name.casefold())
        return None if bot_uuid is None else self._by_uuid.get(bot_uuid)

    def __iter__(self) -> Iterator[BotRecord]:
        return iter(list(self._by_uuid.values()))

    def __len__(self) -> int:
        return len(self._by_uuid)
