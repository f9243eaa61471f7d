"""`Hub`: the embedded BCN — one aiohttp server with `/ws/bot`, `/ws/channel`, `/healthz`,
`/metrics`, and HTTP onboarding (`POST /register`, `POST /bots/onboard`).

Usable standalone (`bcn-bridge hub`) and in-process (the bridge's demo mode, the tests):
`await hub.start()` returns once the socket listens, `hub.port` / `hub.url` say where,
`await hub.stop()` closes every connection and the database.
"""

from __future__ import annotations

import asyncio
import logging
from types import TracebackType
from typing import Any

from aiohttp import web

from bridge import __version__
from bridge.bcn.memory import MemorySocket, memory_pair
from bridge.hub.backpressure import BotBackpressure
from bridge.hub.bots import BotEndpoint
from bridge.hub.config import HubConfig
from bridge.hub.deliveries import Outboxes, OutboxLimits
from bridge.hub.delivery_rows import DeliveryRows
from bridge.hub.dispatch import Dispatcher
from bridge.hub.groups import GroupDirectory
from bridge.hub.links import LinkEndpoint
from bridge.hub.metrics import HubMetrics
from bridge.hub.onboarding import Onboarding
from bridge.hub.orphans import OrphanedRuns
from bridge.hub.registry import BotRegistry
from bridge.hub.run_rows import RunRows, StoredRun
from bridge.hub.runs import RunTable
from bridge.hub.sessions import ChannelSession, SessionDirectory
from bridge.hub.startup_grace import StartupGrace
from bridge.hub.state import BotPresence, HubState, LinkDirectory
from bridge.hub.storage import HubDatabase
from bridge.web.bad_input import bad_input_middleware

log = logging.getLogger(__name__)

CLOSE_GOING_AWAY = 1001


class Hub:
    def __init__(self, config: HubConfig) -> None:
        self.config = config
        self.state: HubState | None = None
        self.dispatcher: Dispatcher | None = None
        self._runner: web.AppRunner | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._bots: BotEndpoint | None = None
        self._links: LinkEndpoint | None = None
        self._orphans: OrphanedRuns | None = None
        self._host = config.host
        self._port = config.port

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        config = self.config
        state = _open_state(config)
        self.state = state
        self.dispatcher = Dispatcher(state)
        self._orphans = OrphanedRuns(state, self.dispatcher)
        self._bots = BotEndpoint(state, self.dispatcher, self._orphans)
        self._links = LinkEndpoint(state, self.dispatcher)
        held = self.dispatcher.held

        def presence_changed(bot_uuid: str) -> None:
            state.announce(state.groups.groups_of(bot_uuid))
            held.wake()  # a held message may be for this bot

        state.presence.on_change = presence_changed
        state.grace.on_over = held.wake

        app = web.Application(middlewares=[bad_input_middleware("hub")])
        app.router.add_get("/ws/bot", self._bots.handle)
        app.router.add_get("/ws/channel", self._links.handle)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/metrics", HubMetrics(state).handle)
        Onboarding(state).routes(app)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        self._resume(state)
        site = web.TCPSite(runner, self._host, self._port)
        try:
            await site.start()
        except OSError:
            await self._release(state)
            await runner.cleanup()
            state.db.close()
            self.state = None
            raise
        self._runner = runner
        server = site._server
        if server is not None and getattr(server, "sockets", None):
            self._port = server.sockets[0].getsockname()[1]
        self._sweeper = asyncio.create_task(self._sweep(), name="hub-sweeper")
        if not config.link_tokens:
            log.warning("no link_tokens configured: no channel link can connect")
        log.info("%s", state.admission.describe())
        log.info("hub listening on %s (%d groups, %d known bots)",
                 self.url, len(state.groups), len(state.registry))

    def _resume(self, state: HubState) -> None:
        """Take up what the previous process left in `hub.db` (just before listening).

        Un-acked deliveries wait in their outboxes for a link's `channel.connect`; the
        reconnect grace starts, then held messages are held again; runs in flight are
        orphans until their bots continue them or the grace ends.
        """
        assert self.dispatcher is not None and self._orphans is not None
        restored = state.outboxes.restore(DeliveryRows(state.db).load())
        state.grace.start()
        held = self.dispatcher.held.restore(state.sessions.get)
        rows = RunRows(state.db).load()
        runs = state.runs.restore(rows, lambda row: _session_of(state, row))
        self._orphans.restored(runs)
        if restored or held or runs:
            log.info("resumed from hub.db: %d undelivered output(s), %d held message(s), "
                     "%d run(s) in flight", restored, held, len(runs))

    async def stop(self) -> None:
        if self.state is not None:
            self.state.runs.stopping = True
        if self.dispatcher is not None:
            self.dispatcher.stopping = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
            self._sweeper = None
        state = self.state
        if state is not None:
            # All at once: one peer that does not read holds its close up to its timeout.
            await asyncio.gather(*(conn.close(CLOSE_GOING_AWAY, "hub stopping") for conn in (
                *(bot.conn for bot in state.presence.all()),
                *(link.conn for link in state.links.all()))))
            await self._release(state)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if state is not None:
            state.db.close()
            self.state = None
        log.info("hub stopped")

    async def open_link(self) -> MemorySocket:
        """A channel link from this process, without a socket: the bridge's end of an
        in-process pair whose other end this hub serves exactly as it serves `/ws/channel`
        (handshake with a link token, acks, send-queue bounds, close codes) — minus the
        WebSocket framing and system calls, which cost the embedded relay about a fifth of
        its CPU per round trip. Refused (ConnectionRefusedError) while the hub is not running.
        """
        state, links = self.state, self._links
        if state is None or links is None or self._runner is None or state.runs.stopping:
            raise ConnectionRefusedError("the embedded hub is not running")
        bridge_end, hub_end = memory_pair()
        state.spawn(links.handle_memory(hub_end), "hub-link-memory")
        return bridge_end

    async def _release(self, state: HubState) -> None:
        """Stop the background work; what it had not done yet stays in `hub.db`."""
        if self._orphans is not None:
            self._orphans.close()
        state.notices.close()
        state.grace.close()
        if self.dispatcher is not None:
            await self.dispatcher.held.close()
        await state.outboxes.close()
        for task in list(state.tasks):
            task.cancel()
        await asyncio.gather(*state.tasks, return_exceptions=True)

    async def __aenter__(self) -> Hub:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # ------------------------------------------------------------------ where
    @property
    def host(self) -> str:
        return self._host

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        """The WebSocket base URL; bots use `{url}/ws/bot`, links `{url}/ws/channel`."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"ws://{host}:{self._port}"

    @property
    def http_url(self) -> str:
        return "http" + self.url[2:]

    # ------------------------------------------------------------------ internals
    def health(self) -> dict[str, Any]:
        state = self.state
        if state is None:
            return {"status": "stopped", "version": __version__}
        return {
            "status": "ok",
            "version": __version__,
            "bots_online": len(state.presence),
            "bots_registered": len(state.registry),
            "links": len(state.links),
            "groups": len(state.groups),
            "sessions": len(state.sessions),
            "runs_running": state.runs.running_count,
            "runs_orphaned": len(self._orphans) if self._orphans is not None else 0,
            "held_messages": len(self.dispatcher.held) if self.dispatcher is not None else 0,
        }

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.json_response(self.health())

    async def _sweep(self) -> None:
        """Expire silent bots, silent links and runs that never finished."""
        assert self.state is not None and self.dispatcher is not None
        assert self._bots is not None and self._links is not None
        config = self.config
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(config.sweep_interval)
            now = loop.time()
            try:
                await self._bots.expire(now)
                await self._links.expire(now)
                self.state.admission.reap(self.state)
            except Exception:  # one bad close must not stop expiry for good
                log.exception("expiry sweep failed")
            for run in self.state.runs.expire(now, config.run_timeout_ms / 1000):
                log.info("run %s of %s timed out", run.run_id, run.bot_uuid)
                self.dispatcher.run_output(
                    run, "error", f"No reply finished within {config.run_timeout_ms // 1000} s."
                )


def _open_state(config: HubConfig) -> HubState:
    """Open `hub.db` and build the shared tables; the database is closed again on failure."""
    db = HubDatabase.in_data_dir(config.data_dir)
    try:
        registry = BotRegistry(db)
        registry.provision(config.bots)
        registry.reserve([name for group in config.groups for name in group.bots])
        links = LinkDirectory()
        limits = OutboxLimits(
            max_pending=config.pending_max_per_binding,
            max_age=config.pending_max_age_seconds,
            window=config.deliver_window,
            timeout=config.request_timeout_seconds,
        )
        secret = config.identity_secret or db.secret("identity_secret")
        state = HubState(
            config=config,
            db=db,
            registry=registry,
            groups=GroupDirectory(config.groups, registry, db),
            sessions=SessionDirectory(db, transcript_limit=config.transcript_limit,
                                      dedup_limit=config.dedup_limit),
            runs=RunTable(RunRows(db)),
            presence=BotPresence(),
            links=links,
            outboxes=Outboxes(links.connections_for, limits, DeliveryRows(db)),
            identity_secret=secret.encode(),
            grace=StartupGrace(db, config.reconnect_grace_seconds,
                               lambda bot_uuid: _bot_name(registry, bot_uuid)),
            backpressure=BotBackpressure(config),
        )
    except BaseException:
        db.close()
        raise
    return state


def _bot_name(registry: BotRegistry, bot_uuid: str) -> str:
    record = registry.by_uuid(bot_uuid)
    return record.name if record is not None else bot_uuid


def _session_of(state: HubState, row: StoredRun) -> ChannelSession:
    """A restored run's session; a stand-in that still addresses its chat if it is gone."""
    session = state.sessions.get(row.session_id)
    if session is None:
        log.warning("run %s: session %s is no longer kept; its notice still goes to binding %s",
                    row.run_id or row.send_key, row.session_id, row.binding_id)
        session = state.sessions.stand_in(row.session_id, row.binding_id)
    return session
