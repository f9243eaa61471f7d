"""The `/ws/bot` endpoint: handshake, liveness, requests and run events.

The first frame must be `bot.connect` (`bot_connect.py` says who the bot is); anything
else is `unauthorized` and the socket is closed.

A bot that connects while its previous connection is still live is refused with
`already_connected` and the new socket is closed — the BCN server's rule, which keeps a
second copy of a bot from stealing the first one's runs. But the old socket is pinged
first: one that does not answer within `probe_timeout_seconds` (a half-dead TCP
connection, a crashed process) is closed and replaced, so a bot restarting over its own
ghost is not locked out until the heartbeat TTL.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import web

from bridge.bcn.connection import Connection
from bridge.bcn.errors import BcnError, ErrorCode
from bridge.bcn.frames import Event, Request
from bridge.hub.backpressure import CLOSE_TOO_SLOW
from bridge.hub.bot_connect import Connected, connect_bot
from bridge.hub.bot_events import BotEvents
from bridge.hub.bot_requests import BotRequests
from bridge.hub.dispatch import Dispatcher
from bridge.hub.handshake import CLOSE_EXPIRED, CLOSE_REPLACED, accept, refuse
from bridge.hub.orphans import OrphanedRuns
from bridge.hub.state import BotLink, HubState

log = logging.getLogger(__name__)


class BotEndpoint:
    def __init__(self, state: HubState, dispatcher: Dispatcher, orphans: OrphanedRuns) -> None:
        self.state = state
        self.dispatcher = dispatcher
        self.orphans = orphans
        self.requests = BotRequests(state, dispatcher)
        self.events = BotEvents(state, dispatcher)
        self._admission: dict[str, asyncio.Lock] = {}
        """One connect at a time per bot, so two racing sockets cannot both get in."""
        state.backpressure.cut_off = self.cut_off

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        ws, conn, frame = await accept(request, self.state.config, "hub-bot", "bot.connect",
                                       autoping=False)
        if frame is None:
            return ws
        reader = asyncio.create_task(conn.run(), name="hub-bot-reader")
        bot: BotLink | None = None
        try:
            bot = await self._admit(conn, frame, request.remote)
            if bot is None:
                await conn.close()
            await reader
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
            if bot is not None and self.state.presence.detach(bot):
                log.info("bot disconnected: %s (%s)", bot.record.name, bot.record.bot_uuid)
                self._offline(bot)
        return ws

    def _offline(self, bot: BotLink) -> None:
        """The bot has no live connection any more: its runs in flight become orphans.

        While the hub stops, nothing is written: the bots were online, and the next start
        should wait for them (`startup_grace.py`) and resume their runs' rows.
        """
        if self.dispatcher.stopping:
            return
        self.state.grace.offline(bot.record.bot_uuid)
        self.orphans.bot_offline(bot.record.bot_uuid)

    async def _admit(
        self, conn: Connection, frame: Request, address: str | None = None
    ) -> BotLink | None:
        """Answer the handshake; the live connection of the bot, or None when refused.

        The read loop is already running (the old socket's probe needs the new one's
        frames to wait), but no request or event is handled before this returns.
        """
        try:
            connected = connect_bot(self.state, conn, frame.params, address)
        except BcnError as exc:
            await refuse(conn, frame.id, exc)
            return None
        bot = connected.bot
        lock = self._admission.setdefault(bot.record.bot_uuid, asyncio.Lock())
        async with lock:
            old = self.state.presence.get(bot.record.bot_uuid)
            if old is not None and await old.conn.probe(self.state.config.probe_timeout_seconds):
                log.info("bot %s (%s) refused: its previous connection is still live",
                         bot.record.name, bot.record.bot_uuid)
                await refuse(conn, frame.id, BcnError(
                    ErrorCode.ALREADY_CONNECTED,
                    f"bot {bot.record.bot_uuid} already has an active WebSocket connection; "
                    "retry after it closes"))
                return None
            if old is not None:
                self.state.presence.detach(old)
                log.info("bot %s (%s): previous connection did not answer a ping; replaced",
                         bot.record.name, bot.record.bot_uuid)
                await old.conn.close(CLOSE_REPLACED, "replaced: did not answer a ping")
            conn.on_request = lambda req: self._on_request(bot, req)
            conn.on_event = lambda event: self._on_event(bot, event)
            await conn.respond(frame.id, connected.payload)
            self.state.grace.online(bot.record.bot_uuid)  # before attach: that wakes held ones
            self.state.presence.attach(bot)
        self.state.registry.connected(bot.record)  # no longer a registration to reap
        self._log_connected(connected)
        if connected.joined:
            self.state.announce(connected.joined)
        return bot

    @staticmethod
    def _log_connected(connected: Connected) -> None:
        bot = connected.bot
        log.info("bot connected: %s (%s) protocol v%d%s%s", bot.record.name,
                 bot.record.bot_uuid, bot.version,
                 " with run events" if bot.run_events else "",
                 f", client {bot.client_kind}" if bot.client_kind else "")

    async def _on_request(self, bot: BotLink, req: Request) -> dict[str, Any]:
        bot.last_seen = asyncio.get_running_loop().time()
        return await self.requests.handle(bot, req)

    async def _on_event(self, bot: BotLink, event: Event) -> None:
        bot.last_seen = asyncio.get_running_loop().time()
        await self.events.handle(bot, event)

    def cut_off(self, bot: BotLink, reason: str) -> None:
        """A bot that stayed behind (`backpressure.py`): offline now, its socket closed.

        What was queued for it is dropped and its unanswered requests fail at once (a
        `chat.send` among them is reported to its chat). The close frame, with `reason`,
        comes after everything the bot has not read yet; one that does not read it within
        `request_timeout_seconds` has its connection cut.
        """
        if self.state.presence.detach(bot):
            self._offline(bot)
        self.state.spawn(bot.conn.close(CLOSE_TOO_SLOW, reason, flush=False,
                                        timeout=self.state.config.request_timeout_seconds),
                         "hub-cut-off-bot")

    async def expire(self, now: float) -> None:
        """Bots silent past the TTL go offline and their socket is closed."""
        ttl = self.state.config.bot_ttl_seconds
        for bot in self.state.presence.all():
            if now - bot.last_seen > ttl and self.state.presence.detach(bot):
                log.info("bot offline (no heartbeat for %.0fs): %s (%s)",
                         ttl, bot.record.name, bot.record.bot_uuid)
                self._offline(bot)
                await bot.conn.close(CLOSE_EXPIRED, "heartbeat expired")
