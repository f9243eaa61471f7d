"""The `/ws/channel` endpoint (the channel link): link handshake and the bridge's requests.

A link authenticates with one of the configured link tokens (compared in constant time),
claims its bindings, and from then on sends `channel.*` requests; the hub sends it
`channel.deliver` requests through the bindings' outboxes. A link silent for longer than
the link TTL is dropped; its un-acked deliveries wait for the next link that claims the
binding.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import Any

from aiohttp import web

from bridge.bcn.connection import Connection
from bridge.bcn.errors import BcnError, ErrorCode
from bridge.bcn.frames import Request
from bridge.bcn.memory import MemorySocket
from bridge.hub.bindings import BindingError, BindingSpec, parse_binding, scope_key
from bridge.hub.dispatch import Dispatcher, invalid
from bridge.hub.handshake import (
    CLOSE_EXPIRED,
    CLOSE_GOING_AWAY,
    CLOSE_REPLACED,
    accept,
    open_connection,
    refuse,
    requested_version,
)
from bridge.hub.routing import Participant
from bridge.hub.state import HubState, LinkSession
from bridge.hub.tokens import TokenSet

log = logging.getLogger(__name__)

LINK_PROTOCOL_VERSION = 1


class LinkEndpoint:
    def __init__(self, state: HubState, dispatcher: Dispatcher) -> None:
        self.state = state
        self.dispatcher = dispatcher
        self._tokens = TokenSet(state.config.link_tokens)

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        ws, conn, frame = await accept(request, self.state.config, "hub-link", "channel.connect")
        if frame is not None:
            await self.serve(conn, frame)
        return ws

    async def handle_memory(self, ws: MemorySocket) -> None:
        """A link from this process (`Hub.open_link`): the same handshake, token and all, and
        the same serving as over `/ws/channel`, on an in-process socket; closed on the way out
        as aiohttp closes a WebSocket whose handler returned."""
        try:
            conn, frame = await open_connection(ws, self.state.config, "hub-link",
                                                "channel.connect")
            if frame is not None:
                await self.serve(conn, frame)
        finally:
            await ws.close(code=CLOSE_GOING_AWAY, message=b"hub link handler ended")

    async def serve(self, conn: Connection, frame: Request) -> None:
        """Answer a link's `channel.connect` and serve its requests until it goes away."""
        try:
            link = self._connect(conn, frame.params)
        except BcnError as exc:
            await refuse(conn, frame.id, exc)
            return
        outboxes = self.state.outboxes
        pending = sum(outboxes.waiting(binding_id) for binding_id in link.bindings)
        await conn.respond(frame.id, {
            "link_id": link.link_id,
            "protocol_version": LINK_PROTOCOL_VERSION,
            "min_supported_version": LINK_PROTOCOL_VERSION,
            "bindings": [spec.echo() for spec in link.bindings.values()],
            "pending_deliveries": pending,
        })
        replaced = self.state.links.add(link)
        log.info("link connected: %s (%s), %d binding(s), %d pending deliveries",
                 link.link_id, link.link_name or "unnamed", len(link.bindings), pending)
        if replaced is not None:
            self.state.links.remove(replaced)
            log.info("link %s replaces %s (same link_name)", link.link_id, replaced.link_id)
            await replaced.conn.close(CLOSE_REPLACED, "replaced by a newer link of the same name")
        outboxes.wake(list(link.bindings))
        conn.on_request = lambda req: self._on_request(link, req)
        try:
            await conn.run()
        finally:
            if self.state.links.remove(link):
                log.info("link disconnected: %s", link.link_id)

    def _connect(self, conn: Connection, params: dict[str, Any]) -> LinkSession:
        token = params.get("token")
        if not isinstance(token, str) or not self._tokens.accepts(token):
            raise BcnError(ErrorCode.UNAUTHORIZED, "bad link token")
        requested_version(params, default=LINK_PROTOCOL_VERSION,
                          lowest=LINK_PROTOCOL_VERSION, newest=LINK_PROTOCOL_VERSION)
        link_name = params.get("link_name")
        if link_name is not None and not isinstance(link_name, str):
            raise invalid("link_name must be a string")
        raw = params.get("bindings") or []
        if not isinstance(raw, list):
            raise invalid("bindings must be a list")
        bindings: dict[str, BindingSpec] = {}
        for index, item in enumerate(raw):
            try:
                spec = parse_binding(item, index)
            except BindingError as exc:
                raise invalid(str(exc)) from None
            if self.state.groups.get(spec.group_id) is None:
                raise invalid(f"bindings[{index}]: unknown group {spec.group_id!r}")
            bindings[spec.binding_id] = spec
        link_id = "lnk-" + secrets.token_hex(6)
        return LinkSession(link_id, link_name or None, conn, bindings,
                           asyncio.get_running_loop().time())

    async def _on_request(self, link: LinkSession, req: Request) -> dict[str, Any]:
        link.last_seen = asyncio.get_running_loop().time()
        params = req.params
        match req.method:
            case "channel.inbound":
                return await self.dispatcher.inbound(link, params)
            case "channel.status":
                return {"bindings_active": len(link.bindings)}
            case "channel.session.reset":
                return self._reset(link, params)
            case "channel.abort":
                return await self.dispatcher.abort(params)
            case "channel.participants":
                return self._participants(params)
            case "channel.history":
                return self._history(params)
            case "channel.connect":
                raise invalid("already connected")
        raise BcnError(ErrorCode.UNKNOWN_METHOD, f"unknown method {req.method!r}")

    def _reset(self, link: LinkSession, params: dict[str, Any]) -> dict[str, Any]:
        spec = self.dispatcher.claimed_binding(link, params)
        thread_id, sender = params.get("thread_id"), params.get("sender_user_id")
        for key, value in (("thread_id", thread_id), ("sender_user_id", sender)):
            if value is not None and not isinstance(value, str | int):
                raise invalid(f"{key} must be a string")
        key = scope_key(spec, None if thread_id is None else str(thread_id),
                        None if sender is None else str(sender))
        return {"old_session_id": self.state.sessions.reset(spec.binding_id, key)}

    def _participants(self, params: dict[str, Any]) -> dict[str, Any]:
        group_id = params.get("group_id")
        if not isinstance(group_id, str):
            raise invalid("group_id must be a string")
        group = self.state.groups.get(group_id)
        if group is None:
            raise BcnError(ErrorCode.NOT_FOUND, f"unknown group {group_id!r}")
        driver = self.state.groups.driver_uuid(group)
        self.state.notices.listings += 1
        return {"participants": [self._participant(p, p.bot_uuid == driver)
                                 for p in self.state.participants(group)]}

    def _participant(self, p: Participant, driver: bool) -> dict[str, Any]:
        """One participant; with what the bot reported (`bot.status`) and onboarded with."""
        entry: dict[str, Any] = {"bot_uuid": p.bot_uuid, "name": p.name, "online": p.online,
                                 "role": "driver" if driver else "member"}
        live = self.state.presence.get(p.bot_uuid)
        if live is not None and live.status is not None:
            entry["dynamic_status"] = live.status
        record = self.state.registry.by_uuid(p.bot_uuid)
        if record is not None and record.profile is not None:
            entry["summary"] = record.profile.get("summary") or ""
        return entry

    def _history(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self.dispatcher.session_of(params)
        limit = params.get("limit")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)
                                  or limit < 1):
            raise invalid("limit must be a positive integer")
        messages = list(session.transcript)
        if limit is not None:
            messages = messages[-limit:]
        return {"bcs_session_id": session.id, "messages": messages}

    async def expire(self, now: float) -> None:
        """Links silent past the TTL are dropped; their deliveries wait for the next one."""
        ttl = self.state.config.link_ttl_seconds
        for link in self.state.links.all():
            if now - link.last_seen > ttl and self.state.links.remove(link):
                log.info("link dropped (silent for %.0fs): %s", ttl, link.link_id)
                await link.conn.close(CLOSE_EXPIRED, "link expired")
