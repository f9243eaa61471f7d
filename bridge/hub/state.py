"""What the hub knows right now: which bots and links are connected, and the shared tables.

`HubState` is handed to the endpoints and the dispatcher, so that each of them reads the
same registry, groups, sessions, runs and outboxes without owning them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bridge.bcn.connection import Connection
from bridge.hub.admission import Admission
from bridge.hub.backpressure import Backlog, BotBackpressure
from bridge.hub.bindings import BindingSpec
from bridge.hub.config import HubConfig
from bridge.hub.deliveries import Outboxes
from bridge.hub.groups import Group, GroupDirectory
from bridge.hub.participants_notices import ParticipantsNotices
from bridge.hub.registry import BotRecord, BotRegistry
from bridge.hub.routing import Participant
from bridge.hub.runs import RunTable
from bridge.hub.sessions import SessionDirectory
from bridge.hub.startup_grace import StartupGrace
from bridge.hub.storage import HubDatabase

log = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)
class BotLink:
    """One live `/ws/bot` connection of a registered bot."""

    record: BotRecord
    conn: Connection
    version: int
    last_seen: float
    run_events: bool = False
    """True when the connection negotiated v3 run events (`chat` / `agent`)."""
    client_kind: str | None = None
    status: dict[str, Any] | None = None
    """The latest `bot.status` the bot reported (status, dynamic_summary, load)."""
    backlog: Backlog = field(default_factory=Backlog)
    """How far behind this connection is (`backpressure.py`)."""


@dataclass(slots=True, eq=False)
class LinkSession:
    """One live `/ws/channel` connection and the bindings it claims."""

    link_id: str
    link_name: str | None
    conn: Connection
    bindings: dict[str, BindingSpec]
    last_seen: float


class BotPresence:
    """Which bots are online: at most one live connection per bot."""

    def __init__(self, on_change: Callable[[str], None] = lambda _uuid: None) -> None:
        self._live: dict[str, BotLink] = {}
        self.on_change = on_change
        """Called with a bot uuid when that bot goes online or offline."""

    def get(self, bot_uuid: str) -> BotLink | None:
        return self._live.get(bot_uuid)

    def online(self, bot_uuid: str) -> bool:
        return bot_uuid in self._live

    def attach(self, bot: BotLink) -> BotLink | None:
        """Make `bot` the live connection; returns the one it replaces, if any."""
        old = self._live.get(bot.record.bot_uuid)
        self._live[bot.record.bot_uuid] = bot
        if old is None:
            self.on_change(bot.record.bot_uuid)
        return old

    def detach(self, bot: BotLink) -> bool:
        """Forget `bot` if it is still the live connection (a replaced one is not)."""
        if self._live.get(bot.record.bot_uuid) is not bot:
            return False
        del self._live[bot.record.bot_uuid]
        self.on_change(bot.record.bot_uuid)
        return True

    def all(self) -> list[BotLink]:
        return list(self._live.values())

    def __len__(self) -> int:
        return len(self._live)


class LinkDirectory:
    """Live channel links, by id, by name and by the bindings they claim."""

    def __init__(self) -> None:
        self._links: dict[str, LinkSession] = {}
        self._by_name: dict[str, LinkSession] = {}
        self._by_binding: dict[str, list[LinkSession]] = {}
        self.specs: dict[str, BindingSpec] = {}
        """The latest policy each binding was claimed with (the newest link's wins)."""

    def add(self, link: LinkSession) -> LinkSession | None:
        """Register a link; returns the live link of the same name it replaces, if any."""
        replaced = self._by_name.get(link.link_name) if link.link_name else None
        self._links[link.link_id] = link
        if link.link_name:
            self._by_name[link.link_name] = link
        for binding_id, spec in link.bindings.items():
            self.specs[binding_id] = spec
            self._by_binding.setdefault(binding_id, []).append(link)
        return replaced

    def remove(self, link: LinkSession) -> bool:
        if self._links.pop(link.link_id, None) is None:
            return False
        if link.link_name and self._by_name.get(link.link_name) is link:
            del self._by_name[link.link_name]
        for binding_id in link.bindings:
            claimants = self._by_binding.get(binding_id, [])
            if link in claimants:
                claimants.remove(link)
        return True

    def connections_for(self, binding_id: str) -> list[Connection]:
        return [link.conn for link in self._by_binding.get(binding_id, ())]

    def claimed(self, binding_id: str) -> bool:
        return bool(self._by_binding.get(binding_id))

    def in_group(self, group_id: str) -> list[LinkSession]:
        return [link for link in self._links.values()
                if any(spec.group_id == group_id for spec in link.bindings.values())]

    def all(self) -> list[LinkSession]:
        return list(self._links.values())

    def __len__(self) -> int:
        return len(self._links)


@dataclass(slots=True, eq=False)
class HubState:
    config: HubConfig
    db: HubDatabase
    registry: BotRegistry
    groups: GroupDirectory
    sessions: SessionDirectory
    runs: RunTable
    presence: BotPresence
    links: LinkDirectory
    outboxes: Outboxes
    identity_secret: bytes
    grace: StartupGrace
    backpressure: BotBackpressure
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    notices: ParticipantsNotices = field(init=False)
    admission: Admission = field(init=False)

    def __post_init__(self) -> None:
        self.notices = ParticipantsNotices(
            self.config.participants_notice_interval_seconds, self._notify_group)
        self.admission = Admission(self.config)

    def participants(self, group: Group) -> list[Participant]:
        out = []
        for bot_uuid in group.members:
            record = self.registry.by_uuid(bot_uuid)
            if record is not None:
                out.append(Participant(bot_uuid, record.name, self.presence.online(bot_uuid)))
        return out

    def announce(self, groups: list[Group]) -> None:
        """Tell links bound to these groups that their participants changed (throttled)."""
        for group in groups:
            self.notices.changed(group.id)

    def _notify_group(self, group_id: str) -> None:
        for link in self.links.in_group(group_id):
            self.spawn(_notify(link, group_id), "participants-changed")

    def spawn(self, coro: object, name: str) -> None:
        """Run a background job the hub waits for (or cancels) on stop."""
        task = asyncio.ensure_future(coro)  # type: ignore[arg-type]
        task.set_name(name)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


async def _notify(link: LinkSession, group_id: str) -> None:
    try:
        await link.conn.send_event("channel.participants.changed", {"group_id": group_id})
    except ConnectionError:
        log.debug("link %s gone before a participants notice", link.link_id)
