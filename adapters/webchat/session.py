"""One browser's WebSocket: frames in, frames out, and nothing a browser sends can crash it."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import WSMsgType, web

from adapters.webchat.chat import Webchat, clean_display_name
from adapters.webchat.frames import (
    FrameError,
    JoinFrame,
    PingFrame,
    SendFrame,
    TapFrame,
    encode,
    error_frame,
    parse_client_frame,
)
from adapters.webchat.rooms import ChatMessage, Member, Room
from adapters.webchat.visitors import ClientIds, Visitor
from adapters.webchat.writes import SEND_TIMEOUT, EndOfTurn, PageTransport, PageWriter

log = logging.getLogger(__name__)

DeliverHuman = Callable[[ChatMessage, Member], Awaitable[None]]
"""Hands a new human message on to the bridge core."""
AnswerTap = Callable[[TapFrame, Room, Member], Awaitable[dict[str, object]]]
"""Hands a press on a card's button to the bridge core; returns the page's private reply."""


class WebchatSession:
    """A connected page: a `Member` of at most one room at a time."""

    def __init__(
        self,
        ws: web.WebSocketResponse,
        chat: Webchat,
        deliver: DeliverHuman,
        *,
        ids: ClientIds,
        visitor: Visitor,
        transport: PageTransport | None = None,
        send_timeout: float = SEND_TIMEOUT,
        turn: EndOfTurn | None = None,
        tap: AnswerTap | None = None,
    ) -> None:
        self.ws = ws
        self.tap = tap
        self.writer = PageWriter(ws, transport, turn or EndOfTurn(), send_timeout=send_timeout)
        """Frames to this page: written at the end of the loop's turn (see `writes.py`)."""
        self.chat = chat
        self.deliver = deliver
        self.ids = ids
        self.visitor = visitor
        self.token = ids.issue()
        """The signed id the page keeps and presents when it joins (see `visitors.py`)."""
        self.client_id = ids.user_id(self.token) or ""
        """The user id bots see: always one this server issued."""
        self.name = ""
        self.room: Room | None = None

    async def send_text(self, data: str) -> None:
        """Queue a frame for this page; it never waits for the page (a page that stops
        reading is cut off by its writer instead)."""
        self.writer.send(data)

    async def send_frame(self, frame: dict[str, object]) -> None:
        await self.send_text(encode(frame))

    async def run(self) -> None:
        """Serve frames until the page goes away; always leaves its room on the way out."""
        try:
            await self.send_frame({**self.chat.hello(), "client_id": self.token})
            async for message in self.ws:
                if message.type is WSMsgType.TEXT:
                    await self._answer(message.data)
                elif message.type is WSMsgType.BINARY:
                    await self.send_frame(error_frame("bad_frame", "send JSON text frames"))
                elif message.type is WSMsgType.ERROR:
                    log.debug("webchat socket error: %s", self.ws.exception())
                    break
        finally:
            if self.room is not None:
                self.chat.leave(self, self.room)
                self.room = None

    async def _answer(self, raw: str) -> None:
        try:
            frame = parse_client_frame(raw)
            if isinstance(frame, JoinFrame):
                await self._join(frame)
            elif isinstance(frame, SendFrame):
                await self._post(frame)
            elif isinstance(frame, PingFrame):
                await self.send_frame({"type": "pong"})
            elif isinstance(frame, TapFrame):
                await self._tap(frame)
        except FrameError as error:
            await self.send_frame(error.to_frame())

    async def _join(self, frame: JoinFrame) -> None:
        name = clean_display_name(frame.name, self.chat.config.max_name_length)
        kept = self.ids.user_id(frame.client_id)  # a reloaded page: the same person
        if kept is not None:
            self.token, self.client_id = str(frame.client_id), kept
        room, self.name = self.chat.join(self, frame.room, self.room, name, self.visitor)
        self.room = room
        self.writer.name = self.name
        await self.send_frame({**self.chat.joined_frame(self, room), "client_id": self.token})

    async def _post(self, frame: SendFrame) -> None:
        if self.room is None:
            raise FrameError(
                "not_joined", "join a room first", client_message_id=frame.client_message_id
            )
        room = self.room
        message, _ = await self.chat.post_human(self, room, frame.client_message_id, frame.text,
                                                frame.reply_to)
        # Queued, never awaited: a page gone already (sent, then closed at once) must not
        # keep the message from the bots, who are the reason it was sent.
        await self.send_frame({"type": "ack", "client_message_id": frame.client_message_id,
                               "message_id": message.id, "message": message.to_json()})
        if not room.awaits_hand_off(message.id):
            return  # a resend of a message the bridge already has
        try:
            await self.deliver(message, self)
        except Exception:
            # It stays "not handed off": a resend with the same id tries again.
            log.exception("webchat: the bridge could not take message %s", message.id)
            await self.send_frame(
                error_frame(
                    "not_delivered",
                    "the bridge could not pass this message on to the bots",
                    client_message_id=frame.client_message_id,
                )
            )
            return
        room.handed_off(message.id)

    async def _tap(self, frame: TapFrame) -> None:
        if self.room is None:
            raise FrameError("not_joined", "join a room first")
        if self.tap is None:
            raise FrameError("no_cards", "this webchat does not take answers by button")
        try:
            reply = await self.tap(frame, self.room, self)
        except Exception:
            log.exception("webchat: the bridge could not take a tap on a card")
            reply = {"text": "The bridge could not take this answer; try again.",
                     "accepted": False}
        await self.send_frame({"type": "tap_reply", "tap_id": frame.tap_id, **reply})
