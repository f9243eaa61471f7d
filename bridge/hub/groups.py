"""Groups from config: members by name, a driver, and auto-join for newcomers.

Membership listed in config is recomputed from config on every start (so removing a name
there removes the bot); membership gained through `auto_join` is kept in `hub.db`, because
the bot joined at registration time and nothing in config records it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from bridge.hub.config import GroupConfig
from bridge.hub.registry import BotRecord, BotRegistry
from bridge.hub.storage import HubDatabase


@dataclass(slots=True)
class Group:
    id: str
    name: str
    driver_name: str | None
    bot_names: list[str]
    auto_join: bool
    type: str = "default"
    """`default`, or `manager_worker` (the driver manages, the others work on tasks)."""
    auto_join_limit: int = 100
    """At most this many members joined through `auto_join` (not listed in `bots`)."""
    members: list[str] = field(default_factory=list)
    """Member bot uuids in a stable order: config order first, then joining order."""
    auto_joined: set[str] = field(default_factory=set)
    """The members that joined through `auto_join` (what `auto_join_limit` counts)."""

    @property
    def full(self) -> bool:
        """No room for one more bot through auto_join."""
        return self.auto_join and len(self.auto_joined) >= self.auto_join_limit

    @property
    def manager_worker(self) -> bool:
        return self.type == "manager_worker"

    def lists(self, name: str) -> bool:
        folded = name.casefold()
        return any(listed.casefold() == folded for listed in self.bot_names)


class GroupDirectory:
    def __init__(self, configs: list[GroupConfig], registry: BotRegistry, db: HubDatabase):
        self._registry = registry
        self._db = db
        self._groups: dict[str, Group] = {}
        joined: dict[str, list[str]] = {}
        for group_id, bot_uuid in db.rows("SELECT group_id, bot_uuid FROM group_members"):
            joined.setdefault(group_id, []).append(bot_uuid)
        for config in configs:
            group = Group(config.id, config.name, config.driver, list(config.bots),
                          config.auto_join, config.type, config.auto_join_limit)
            for name in config.bots:
                record = registry.by_name(name)
                if record is not None:
                    self._add(group, record.bot_uuid)
            for bot_uuid in joined.get(config.id, []):
                if registry.by_uuid(bot_uuid) is not None and self._add(group, bot_uuid):
                    group.auto_joined.add(bot_uuid)
            self._groups[group.id] = group

    @staticmethod
    def _add(group: Group, bot_uuid: str) -> bool:
        if bot_uuid in group.members:
            return False
        group.members.append(bot_uuid)
        return True

    def admit(self, record: BotRecord) -> list[Group]:
        """Put a newly known bot into the groups that list its name or auto-join everyone."""
        changed = []
        for group in self._groups.values():
            if group.lists(record.name):
                if self._add(group, record.bot_uuid):
                    changed.append(group)
            elif group.auto_join and not group.full and self._add(group, record.bot_uuid):
                group.auto_joined.add(record.bot_uuid)
                self._db.write(
                    "INSERT OR IGNORE INTO group_members (group_id, bot_uuid) VALUES (?, ?)",
                    (group.id, record.bot_uuid),
                )
                changed.append(group)
        return changed

    def full_for(self, name: str | None) -> list[Group]:
        """The auto_join groups a new bot of that name would join, but which are full.

        A bot listed by name in a group is expected there and never counts as anonymous.
        """
        return [group for group in self._groups.values()
                if group.full and (name is None or not group.lists(name))]

    def forget(self, bot_uuids: set[str]) -> list[Group]:
        """Take forgotten bots out of every group (their rows are gone already)."""
        changed = []
        for group in self._groups.values():
            if any(bot_uuid in bot_uuids for bot_uuid in group.members):
                group.members = [u for u in group.members if u not in bot_uuids]
                group.auto_joined -= bot_uuids
                changed.append(group)
        return changed

    def get(self, group_id: str) -> Group | None:
        return self._groups.get(group_id)

    def groups_of(self, bot_uuid: str) -> list[Group]:
        return [group for group in self._groups.values() if bot_uuid in group.members]

    def driver_uuid(self, group: Group) -> str | None:
        if group.driver_name is None:
            return None
        record = self._registry.by_name(group.driver_name)
        return None if record is None else record.bot_uuid

    def role_of(self, group: Group, bot_uuid: str) -> str:
        """The BCN participant role: driver/consultant, or manager/worker in task groups."""
        lead = bot_uuid == self.driver_uuid(group)
        if group.manager_worker:
            return "manager" if lead else "worker"
        return "driver" if lead else "consultant"

    def __iter__(self) -> Iterator[Group]:
        return iter(self._groups.values())

    def __len__(self) -> int:
        return len(self._groups)
