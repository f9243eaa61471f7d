"""The `/ws/bot` endpoint (seed 000 §3–§6): handshake, heartbeats, and bot events.

The first frame must be `bot.connect`; anything else is `unauthorized` and the socket is
closed. A new bot (no token) is registered and told its token once; a known token
restores the identity; an unknown one is refused. A second live connection with the same
token replaces the first, which is closed — a bot restarting over a half-dead TCP
connection must not be locked out by its own ghost.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import web

from bridge.bcn.connection import Connection
from bridge.bcn.errors import BcnError, ErrorCode
from bridge.bcn.frames import Event, Request
from bridge.hub.config import CURRENT_PROTOCOL_VERSION
from bridge.hub.dispatch import Dispatcher
from bridge.hub.groups import Group
from bridge.hub.handshake import (
    CLOSE_EXPIRED,
    CLOSE_REPLACED,
    accept,
    refuse,
    requested_version,
)
from bridge.hub.registry import NameTaken
from bridge.hub.state import BotLink, HubState

log = logging.getLogger(__name__)

class BotEndpoint:
    def __init__(self, state: HubState, dispatcher: Dispatcher) -> None:
        self.state = state
        self.dispatcher = dispatcher

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        ws, conn, frame = await accept(request, self.state.config, "hub-bot", "bot.connect")
        if frame is None:
            return ws
        try:
            bot, payload, joined = self._connect(conn, frame.params)
        except BcnError as exc:
            await refuse(conn, frame.id, exc)
            return ws
        await conn.respond(frame.id, payload)
        old = self.state.presence.attach(bot)
        log.info("bot connected: %s (%s) protocol v%d%s", bot.record.name, bot.record.bot_uuid,
                 bot.version, ", replacing its previous connection" if old else "")
        if old is not None:
            await old.conn.close(CLOSE_REPLACED, "replaced by a newer connection")
        if joined:
            self.state.announce(joined)
        conn.on_request = lambda req: self._on_request(bot, req)
        conn.on_event = lambda event: self._on_event(bot, event)
        try:
            await conn.run()
        finally:
            if self.state.presence.detach(bot):
                log.info("bot disconnected: %s (%s)", bot.record.name, bot.record.bot_uuid)
        return ws

    def _connect(
        self, conn: Connection, params: dict[str, Any]
    ) -> tuple[BotLink, dict[str, Any], list[Group]]:
        config = self.state.config
        version = requested_version(
            params, default=1, lowest=config.min_protocol_version,
            newest=CURRENT_PROTOCOL_VERSION,
        )
        token = params.get("token")
        joined: list[Group] = []
        if token is not None and token != "":
            if not isinstance(token, str):
                raise BcnError(ErrorCode.INVALID_REQUEST, "token must be a string")
            record = self.state.registry.by_token(token)
            if record is None:
                raise BcnError(ErrorCode.UNAUTHORIZED, "unknown token")
            is_new = False
        else:
            name = params.get("name")
            if name is not None and not isinstance(name, str):
                raise BcnError(ErrorCode.INVALID_REQUEST, "name must be a string")
            try:
                record, token = self.state.registry.register(name)
            except (NameTaken, ValueError) as exc:
                raise BcnError(ErrorCode.INVALID_REQUEST, str(exc)) from None
            joined = self.state.groups.admit(record)
            is_new = True
            log.info("bot registered: %s (%s)", record.name, record.bot_uuid)
        loop_time = asyncio.get_running_loop().time()
        bot = BotLink(record, conn, version, loop_time)
        payload: dict[str, Any] = {
            "is_new": is_new,
            "token": token,
            "bot_uuid": record.bot_uuid,
            "name": record.name,
            "protocol_version": version,
            "min_supported_version": config.min_protocol_version,
            "env": {"BCN_BOT_UUID": record.bot_uuid, "BCN_BOT_TOKEN": token},
        }
        notice = config.deprecations.get(version)
        if notice is not None:
            payload["deprecation"] = notice.model_dump()
        return bot, payload, joined

    async def _on_request(self, bot: BotLink, req: Request) -> dict[str, Any]:
        bot.last_seen = asyncio.get_running_loop().time()
        if req.method == "bot.status":
            return {"bot_uuid": bot.record.bot_uuid, "status": "online",
                    "ttl_ms": int(self.state.config.bot_ttl_seconds * 1000)}
        if req.method == "bot.connect":
            raise BcnError(ErrorCode.INVALID_REQUEST, "already connected")
        raise BcnError(ErrorCode.UNKNOWN_METHOD, f"unknown method {req.method!r}")

    async def _on_event(self, bot: BotLink, event: Event) -> None:
        bot.last_seen = asyncio.get_running_loop().time()
        await self.dispatcher.bot_event(bot, event)

    async def expire(self, now: float) -> None:
        """Bots silent past the TTL go offline and their socket is closed."""
        ttl = self.state.config.bot_ttl_seconds
        for bot in self.state.presence.all():
            if now - bot.last_seen > ttl and self.state.presence.detach(bot):
                log.info("bot offline (no heartbeat for %.0fs): %s (%s)",
                         ttl, bot.record.name, bot.record.bot_uuid)
                await bot.conn.close(CLOSE_EXPIRED, "heartbeat expired")
