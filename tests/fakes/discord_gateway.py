"""The fake Discord's gateway: the WebSocket protocol discord.py speaks, sessions and resumes.

HELLO at once; heartbeats (op 1) are ACKed (op 11); IDENTIFY (op 2) opens a session —
refused with 4004 for a wrong token and 4014 for a privileged intent the "developer portal"
has off — and gets READY and one GUILD_CREATE per server of its shard; RESUME (op 6) gets the
events the session missed, then RESUMED, or INVALID_SESSION (op 9) for a session Discord
forgot; REQUEST_GUILD_MEMBERS (op 8) gets one GUILD_MEMBERS_CHUNK. A session outlives its
socket: events dispatched while it is disconnected wait for its resume. As on Discord, one
token may open several sessions, on one shard too, and each gets every event of its shard:
which is why bridge instances must agree on who runs a shard. Frames are plain
JSON text (discord.py accepts them although it asks for zlib-stream).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

from tests.fakes import discord_payloads as p

if TYPE_CHECKING:
    from tests.fakes.discord import FakeDiscord

HEARTBEAT_MS = 41_250


@dataclass
class Session:
    """A gateway session: survives its socket, so a RESUME can replay what it missed."""

    id: str
    shard: tuple[int, int]
    intents: int
    frames: list[dict[str, Any]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    socket: web.WebSocketResponse | None = None
    valid: bool = True

    def covers(self, guild_id: int | None) -> bool:
        shard_id, count = self.shard
        return guild_id is None or (guild_id >> 22) % count == shard_id


class FakeGateway:
    """The gateway half of one `FakeDiscord` (its servers, token and switches)."""

    def __init__(self, discord: FakeDiscord) -> None:
        self.discord = discord
        self.frames: list[dict[str, Any]] = []
        """Every frame the clients sent, in order."""
        self.paths: list[str] = []
        """The URL path of every connection (to tell resumes that left the gateway)."""
        self.sessions: list[Session] = []
        self._sockets: set[web.WebSocketResponse] = set()
        self._transports: dict[web.WebSocketResponse, Any] = {}

    def routes(self, app: web.Application) -> None:
        for path in ("/gateway/", "/gateway", "/resume-gateway/", "/resume-gateway"):
            app.router.add_get(path, self._connection)

    async def drop(self) -> None:
        """Cut every gateway connection without a close frame (a network drop)."""
        for socket in list(self._sockets):
            transport = self._transports.get(socket)
            if transport is not None:
                transport.abort()
        await self.discord.wait_until(lambda: not self._sockets)

    async def close(self, code: int, message: str = "") -> None:
        for socket in list(self._sockets):
            with contextlib.suppress(Exception):
                await socket.close(code=code, message=message.encode())

    def invalidate(self) -> None:
        """Discord forgot every session: the next RESUME gets INVALID_SESSION."""
        for session in self.sessions:
            session.valid = False

    def live(self, shard: tuple[int, int] | None = None) -> list[Session]:
        """Sessions with a connected socket (on `shard`, if given)."""
        return [s for s in self.sessions
                if s.socket is not None and not s.socket.closed and shard in (None, s.shard)]

    def dispatch(self, event: str, data: dict[str, Any], guild_id: int | None = None) -> None:
        """Send an event to every live session that covers the guild (kept for resumes)."""
        for session in self.sessions:
            if session.valid and session.covers(guild_id):
                self._send_event(session, event, self._as_seen_by(session, event, data))
        self.discord.note_change()

    def _send_event(self, session: Session, event: str, data: dict[str, Any]) -> None:
        session.frames.append({"op": 0, "t": event, "s": len(session.frames) + 1, "d": data})
        session.changed.set()

    def _as_seen_by(self, session: Session, event: str, data: dict[str, Any]) -> dict[str, Any]:
        """Discord strips content from messages unless the message content intent is on
        (except the bot's own messages and those that mention it)."""
        if event not in ("MESSAGE_CREATE", "MESSAGE_UPDATE"):
            return data
        if session.intents & p.MESSAGE_CONTENT_INTENT:
            return data
        if data["author"]["id"] == self.discord.bot["id"] or any(
            m["id"] == self.discord.bot["id"] for m in data.get("mentions", [])
        ):
            return data
        return {**data, "content": "", "embeds": [], "attachments": [], "components": []}

    async def _connection(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse(autoping=True)
        await socket.prepare(request)
        self.paths.append(request.path)
        self._sockets.add(socket)
        self._transports[socket] = request.transport
        writer: asyncio.Task[None] | None = None
        try:
            await socket.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": HEARTBEAT_MS}}))
            async for msg in socket:
                if msg.type is not WSMsgType.TEXT:
                    continue
                frame = json.loads(msg.data)
                self.frames.append(frame)
                self.discord.note_change()
                op, data = frame.get("op"), frame.get("d")
                if op == 1:
                    await socket.send_str(json.dumps({"op": 11}))
                elif op in (2, 6):
                    session = await (self._identify if op == 2 else self._resume)(socket, data)
                    if session is not None and writer is None:
                        start = len(session.frames) if op == 2 else int(data.get("seq") or 0)
                        if op == 2:
                            self._hello_events(session)
                        else:
                            self._send_event(session, "RESUMED", {})
                        writer = asyncio.create_task(self._write(socket, session, start))
                elif op == 8:
                    self.discord.member_chunk(data)
        finally:
            self._sockets.discard(socket)
            self._transports.pop(socket, None)
            if writer is not None:
                writer.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await writer
            for session in self.sessions:
                if session.socket is socket:
                    session.socket = None
            self.discord.note_change()
        return socket

    async def _write(self, socket: web.WebSocketResponse, session: Session, start: int) -> None:
        """Send the session's events from `start` on, in order, as they come."""
        index = start
        while not socket.closed:
            if index < len(session.frames):
                await socket.send_str(json.dumps(session.frames[index]))
                index += 1
                continue
            session.changed.clear()
            if index < len(session.frames):
                continue
            await session.changed.wait()

    async def _identify(self, socket: web.WebSocketResponse, data: dict[str, Any]
                        ) -> Session | None:  # fmt: skip
        if not self.discord.answer_identify:
            return None
        if data.get("token") != self.discord.token:
            await socket.close(code=4004, message=b"Authentication failed.")
            return None
        intents = int(data.get("intents") or 0)
        refused = [name for name, bit in p.PRIVILEGED_INTENTS.items()
                   if intents & bit and name not in self.discord.privileged_enabled]
        if refused:
            await socket.close(code=4014, message=b"Disallowed intent(s).")
            return None
        shard = tuple(data.get("shard") or (0, 1))
        session = Session(secrets.token_hex(16), (int(shard[0]), int(shard[1])), intents,
                          socket=socket)
        self.sessions.append(session)
        return session

    async def flushed(self) -> None:
        """Until every connected session has written its pending events to its socket (and
        the client has had a moment to read them): the echo goes out before the answer."""
        async with asyncio.timeout(2):
            while any(s.socket is not None and not s.socket.closed and s.changed.is_set()
                      for s in self.sessions):
                await asyncio.sleep(0.001)
        await asyncio.sleep(0.01)

    def _hello_events(self, session: Session) -> None:
        for event, data in self.discord.ready_events(session):
            self._send_event(session, event, data)

    async def _resume(self, socket: web.WebSocketResponse, data: dict[str, Any]
                      ) -> Session | None:  # fmt: skip
        found = next((s for s in self.sessions if s.id == data.get("session_id")), None)
        if found is None or not found.valid or data.get("token") != self.discord.token:
            await socket.send_str(json.dumps({"op": 9, "d": False}))
            return None
        found.socket = socket
        return found
