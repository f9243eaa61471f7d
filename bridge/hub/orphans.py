"""Runs whose bot has no live connection: ended within seconds, unless the bot continues.

The BCN protocol ties a run to its bot and `run_id`, not to one connection: a bot reconnects
with its token and BCN restores its identity (§4.4), and the BCN server's own published
client queues run events while it is disconnected and sends them once it is back
(tests/interop proves the hub takes them). So a closed socket does not end a run on the
spot. The run becomes an orphan for `run_reconnect_grace_seconds`:

- an event of that run from its bot (on any later connection) within that time takes it
  back, and it goes on as if nothing happened;
- otherwise it ends with an `error` output saying the bot went offline mid-reply, so the
  chat and the bridge's protocol middleware (which marks a routed request `failed`) learn it
  within seconds instead of after `run_timeout_ms`. A bot that reconnected but said nothing
  more of the run has lost it (this SDK cancels its runs when its connection drops); it is
  sent `chat.abort` for it, so both sides agree the run is over. Its late events are
  dropped with a log line.

After a hub restart every run left in `hub.db` is an orphan from the start, for
`reconnect_grace_seconds` (the bots are reconnecting as well).
"""

from __future__ import annotations

import asyncio
import logging

from bridge.hub.dispatch import Dispatcher
from bridge.hub.runs import Run
from bridge.hub.state import HubState

log = logging.getLogger(__name__)


class OrphanedRuns:
    def __init__(self, state: HubState, dispatcher: Dispatcher) -> None:
        self.state = state
        self.dispatcher = dispatcher
        self._orphans: dict[Run, str] = {}
        """Each orphan and the text its error output will carry."""
        self._timer: asyncio.TimerHandle | None = None

    def bot_offline(self, bot_uuid: str) -> None:
        """The bot's live connection is gone (closed, or its heartbeat expired)."""
        runs = self.state.runs.running_of(bot_uuid)
        if not runs or self.dispatcher.stopping:
            return
        grace = self.state.config.run_reconnect_grace_seconds
        name = self._name(bot_uuid)
        log.info("bot %s went offline with %d run(s) in flight; each ends in %.1fs unless "
                 "the bot continues it", name, len(runs), grace)
        deadline = asyncio.get_running_loop().time() + grace
        for run in runs:
            self._orphan(run, deadline, f"{name} went offline mid-reply.")
        self._schedule()

    def restored(self, runs: list[Run]) -> None:
        """Runs a previous hub process left in flight; their bots are reconnecting too."""
        if not runs:
            return
        config = self.state.config
        grace = max(config.reconnect_grace_seconds, config.run_reconnect_grace_seconds)
        log.info("%d run(s) were in flight when the hub last stopped; each ends in %.1fs "
                 "unless its bot continues it", len(runs), grace)
        deadline = asyncio.get_running_loop().time() + grace
        for run in runs:
            self._orphan(run, deadline, f"{self._name(run.bot_uuid)}'s reply was interrupted "
                                        "(the BCN hub restarted while it was running).")
        self._schedule()

    def _orphan(self, run: Run, deadline: float, notice: str) -> None:
        if run.orphaned_until is not None:  # already waiting: the first deadline stands
            return
        run.orphaned_until = deadline
        self._orphans[run] = notice

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        deadlines = [run.orphaned_until for run in self._orphans
                     if run.orphaned_until is not None]
        if deadlines:
            self._timer = asyncio.get_running_loop().call_at(min(deadlines), self._due)

    def _due(self) -> None:
        self._timer = None
        now = asyncio.get_running_loop().time()
        for run, notice in list(self._orphans.items()):
            if not run.running or run.orphaned_until is None:  # finished, or continued
                del self._orphans[run]
            elif run.orphaned_until <= now:
                del self._orphans[run]
                self._end(run, notice)
        self._schedule()

    def _end(self, run: Run, notice: str) -> None:
        log.warning("run %s of %s ended: %s", run.run_id, self._name(run.bot_uuid), notice)
        self.state.runs.finish(run, "offline")
        self.dispatcher.run_output(run, "error", notice)
        if self.state.presence.online(run.bot_uuid):  # back, but silent on this run
            self.state.spawn(self.dispatcher.tell_abort(run), "abort-orphan")

    def _name(self, bot_uuid: str) -> str:
        record = self.state.registry.by_uuid(bot_uuid)
        return record.name if record is not None else bot_uuid

    def __len__(self) -> int:
        return sum(1 for run in self._orphans if run.running and run.orphaned_until is not None)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
