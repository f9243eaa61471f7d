"""The reconnect grace after a start: which bots the hub is waiting for, and until when.

Right after a hub (re)start, the bots that were online before are still reconnecting
(with backoff: seconds). A human message arriving in that window would route to nobody and
draw a "no bot is available" notice for every chat at once. So the hub remembers who is
online (`bots_online` in `hub.db`: a row while a bot is connected, written on the rare
connect/disconnect; a crash leaves the rows as they were), and for `reconnect_grace_seconds`
after a start it awaits those bots: a message for one of them is held (`held_messages.py`)
until it is back or the grace is over. A bot that comes back is awaited no longer; when the
grace ends, the bots still missing are logged and forgotten, so the next start does not wait
for them again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from bridge.hub.storage import HubDatabase

log = logging.getLogger(__name__)


class StartupGrace:
    def __init__(self, db: HubDatabase, seconds: float, name_of: Callable[[str], str]) -> None:
        self._writes = db.writes
        self._name_of = name_of
        self.awaited: set[str] = {row[0] for row in db.rows("SELECT bot_uuid FROM bots_online")}
        """Bots that were online when the hub last ran and are not back yet."""
        self._seconds = seconds
        self.until = 0.0
        self.on_over: Callable[[], None] = lambda: None
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Begin the grace now (the hub is listening)."""
        loop = asyncio.get_running_loop()
        if not self.awaited or self._seconds <= 0:
            self._forget_missing()
            return
        self.until = loop.time() + self._seconds
        self._timer = loop.call_at(self.until, self._over)
        log.info("reconnect grace: waiting up to %.0fs for %d bot(s) that were online: %s",
                 self._seconds, len(self.awaited), self._names(self.awaited))

    @property
    def active(self) -> bool:
        return bool(self.awaited) and asyncio.get_running_loop().time() < self.until

    def awaits(self, bot_uuid: str) -> bool:
        """True while the grace lasts and this bot, online before, is not back yet."""
        return bot_uuid in self.awaited and self.active

    def online(self, bot_uuid: str) -> None:
        self._writes.add("INSERT OR REPLACE INTO bots_online (bot_uuid, since) VALUES (?, ?)",
                         (bot_uuid, time.time()))
        if bot_uuid in self.awaited:
            self.awaited.discard(bot_uuid)
            if not self.awaited:
                log.info("reconnect grace: every bot that was online is back")
                self._end()

    def offline(self, bot_uuid: str) -> None:
        self._writes.add("DELETE FROM bots_online WHERE bot_uuid = ?", (bot_uuid,))

    def _over(self) -> None:
        self._timer = None
        if self.awaited:
            log.warning("reconnect grace over after %.0fs; not back: %s", self._seconds,
                        self._names(self.awaited))
        self._forget_missing()
        self._end()

    def _forget_missing(self) -> None:
        for bot_uuid in self.awaited:
            self.offline(bot_uuid)
        self.awaited.clear()

    def _end(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.until = 0.0
        self.on_over()

    def _names(self, uuids: set[str]) -> str:
        return ", ".join(sorted(self._name_of(bot_uuid) for bot_uuid in uuids))

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
