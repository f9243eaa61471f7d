"""The webchat adapter: a chat channel in the browser, served by the bridge's own web server.

It is the one platform the bridge fully owns, so it is also where the core's abilities show
best: replies stream in place under each bot's name, protocol blocks become cards, and a side
panel lists the room's open requests.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from aiohttp import web

from adapters.webchat.chat import Webchat
from adapters.webchat.config import WebchatAccountConfig
from adapters.webchat.frames import TapFrame
from adapters.webchat.page import WebchatPage
from adapters.webchat.rooms import ChatMessage, Member, MessageKind, Room, TooManyRooms
from adapters.webchat.session import WebchatSession
from adapters.webchat.visitors import ClientIds, Visitor
from adapters.webchat.writes import EndOfTurn
from bridge import random_ids
from bridge.core.adapter import Adapter, Capabilities, InboundSink, PermanentSendError
from bridge.core.binding import Binding
from bridge.core.model import Inbound, Outbound, OutboundKind, PlatformRef, Sender
from bridge.core.taps import Tap
from bridge.text.mention_words import MENTION_WORD, mention_for_word
from bridge.text.model import MentionKind
from bridge.web.origin import origin_refusal
from bridge.web.server import WebServer

log = logging.getLogger(__name__)

MIN_FRAME_BYTES = 64 * 1024
BYTES_PER_CHARACTER = 4
"""UTF-8 needs at most four bytes per character; JSON escaping adds a little on top."""

_KINDS: dict[OutboundKind, MessageKind] = {
    OutboundKind.DELTA: "delta",
    OutboundKind.FINAL: "final",
    OutboundKind.SYSTEM: "system",
}


def mentioned_names(text: str) -> tuple[str, ...]:
    """The `@Name`s a person typed, in order, once each (everyone-style words excluded)."""
    names: dict[str, None] = {}
    for match in MENTION_WORD.finditer(text):
        mention = mention_for_word(match.group("name"))
        if mention.kind is MentionKind.USER:
            names.setdefault(mention.name, None)
    return tuple(names)


def panel_item(item: dict[str, Any]) -> dict[str, Any]:
    """A request as the page's panel reads it: `depth` as `{current, max}` (the core's
    conversation records keep it as a pair)."""
    depth = item.get("depth")
    if isinstance(depth, list | tuple) and len(depth) == 2:
        return {**item, "depth": {"current": depth[0], "max": depth[1]}}
    return item


class WebchatAdapter(Adapter):
    """One webchat account. Its routes are mounted on the bridge's `WebServer` at construction.

    The account `main` lives under `/webchat/main/` and, unless `serve_at_root: false`, at `/`;
    any other account lives under `/webchat/<account>/`.
    """

    channel_type: ClassVar[str] = "webchat"
    capabilities: ClassVar[Capabilities] = Capabilities(
        dialect="webchat",
        max_length=16000,
        can_edit=True,
        custom_sender=True,
        threads=False,
        typing=False,
        min_edit_interval=0.25,
        echoes_own_posts=False,
        replies=False,
        redelivers=False,  # a page's resend is filtered by its room (`Room.seen`)
        posts_in_process=True,
        request_panel=True,
        cards=True,
    )
    config_model: ClassVar[type[WebchatAccountConfig]] = WebchatAccountConfig
    settings: WebchatAccountConfig

    def __init__(
        self,
        account: str,
        config: WebchatAccountConfig,
        sink: InboundSink,
        *,
        web: WebServer | None = None,
    ) -> None:
        super().__init__(account, config, sink, web=web)
        if web is None:
            raise ValueError("the webchat adapter needs the bridge's web server (web=WebServer)")
        self.chat = Webchat(self.settings)
        self.ids = ClientIds()
        self._connections = itertools.count(1)
        self.base = f"/webchat/{account}/"
        self.page = WebchatPage(self.settings.title, self.base)
        self._sessions: set[WebchatSession] = set()
        self._turn = EndOfTurn()
        """Every page's frames of one loop turn, written together (see `writes.py`)."""
        self._accepting = False
        self._mount(web)

    @property
    def ws_path(self) -> str:
        return f"{self.base}ws"

    def _mount(self, server: WebServer) -> None:
        router = server.router
        router.add_get(self.base, self.page.index)
        router.add_get(self.base.rstrip("/"), self._to_base)
        router.add_get(f"{self.base}static/{{name}}", self.page.asset)
        router.add_get(self.ws_path, self._socket)
        serve_at_root = self.settings.serve_at_root
        if serve_at_root or (serve_at_root is None and self.account == "main"):
            router.add_get("/", self.page.index)
        server.app.on_shutdown.append(self._close_sockets)

    def use_bindings(self, bindings: list[Binding]) -> None:
        super().use_bindings(bindings)
        self.set_bound_rooms([binding.chat for binding in bindings])
        self.chat.set_room_groups((binding.chat, binding.group) for binding in bindings)

    def use_group_bots(self, group: str, names: Sequence[str]) -> None:
        """The hub's bots of a bound group: no person may join its rooms under their names."""
        self.chat.set_group_bots(group, names)

    def set_bound_rooms(self, rooms: Iterable[str] | None) -> None:
        """Tell the page which rooms are bound to a BCN group (others get a hint)."""
        self.chat.set_bound_rooms(rooms)

    async def start(self) -> None:
        self._accepting = True

    async def stop(self) -> None:
        self._accepting = False
        await self._close_sockets()

    async def send(self, out: Outbound) -> PlatformRef:
        message = self._message(random_ids.token_hex(16), out)
        try:
            await self.chat.post(message)
        except TooManyRooms as error:
            raise PermanentSendError(str(error)) from None
        return PlatformRef(chat_id=message.room, message_id=message.id)

    async def edit(self, ref: PlatformRef, out: Outbound) -> None:
        message = self._message(ref.message_id, out, room=ref.chat_id)
        shown = self.chat.rooms.get(ref.chat_id)
        previous = shown.find(ref.message_id) if shown is not None else None
        if previous is not None:
            message.timestamp = previous.timestamp
        try:
            await self.chat.replace(message)
        except TooManyRooms as error:
            raise PermanentSendError(str(error)) from None

    async def update_requests(self, chat_id: str, requests: list[dict[str, Any]]) -> None:
        if not self.settings.allows_room(chat_id):
            raise PermanentSendError(f"webchat {self.account!r} has no room {chat_id!r}")
        try:
            await self.chat.set_requests(chat_id, [panel_item(item) for item in requests])
        except TooManyRooms as error:
            raise PermanentSendError(str(error)) from None

    def _message(self, message_id: str, out: Outbound, room: str | None = None) -> ChatMessage:
        room = room if room is not None else out.binding.chat
        if not self.settings.allows_room(room):
            raise PermanentSendError(f"webchat {self.account!r} has no room {room!r}")
        kind = _KINDS[out.kind]
        return ChatMessage(
            id=message_id,
            room=room,
            kind=kind,
            sender_name=out.sender_label or "bridge",
            is_bot=kind != "system" and not out.from_human,
            html=out.text,
            protocol=out.protocol,
            run_id=out.run_id,
            card=out.card.view() if out.card is not None else None,
        )

    async def _deliver(self, message: ChatMessage, member: Member) -> None:
        text = message.text or ""
        await self.sink(
            Inbound(
                channel_type=self.channel_type,
                account=self.account,
                chat_id=message.room,
                message_id=message.id,
                sender=Sender(id=member.client_id, name=member.name),
                text=self._as_answer(message.room, message.reply_to, text),
                reply_to=message.reply_to,
                mentions=mentioned_names(text),
                timestamp=message.timestamp,
            )
        )

    def _as_answer(self, room: str, reply_to: str | None, text: str) -> str:
        """A reply to a bot's question is its answer, said so (`Re: <id>: …`, which the core
        takes as the answer however it reads): the webchat keeps no record of its posts
        for the core to look a reply up in (`Capabilities.replies` off), but its room still
        holds the message replied to and what it asked."""
        replied = self.chat.rooms.open(room).find(reply_to) if reply_to else None
        protocol = replied.protocol if replied is not None else None
        if protocol and protocol.get("type") == "CLARIFY" and protocol.get("request_id"):
            return f"Re: {protocol['request_id']}: {text}"
        return text

    async def _tap(self, frame: TapFrame, room: Room, member: Member) -> dict[str, object]:
        """A press on a card, as the session's member (the page cannot say who it is)."""
        if self.taps is None:
            return {"text": "Answers by button are not on here.", "accepted": False}
        reply = await self.taps(Tap(
            channel_type=self.channel_type, account=self.account, chat_id=room.name,
            sender=Sender(id=member.client_id, name=member.name), data=frame.data,
            text=frame.text, tap_id=frame.tap_id,
        ))
        return {"text": reply.text, "accepted": reply.accepted,
                "wants_own_words": reply.wants_own_words}

    async def _to_base(self, request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(self.base)

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        if not self._accepting:
            raise web.HTTPServiceUnavailable(text="the webchat is not running")
        refusal = origin_refusal(request, self.settings.allowed_origins)
        if refusal is not None:
            log.info("webchat: refused a WebSocket from %s: %s", request.remote, refusal)
            raise web.HTTPForbidden(text=refusal)
        frame_limit = max(
            MIN_FRAME_BYTES, self.settings.max_message_length * BYTES_PER_CHARACTER * 2
        )
        ws = web.WebSocketResponse(heartbeat=30.0, max_msg_size=frame_limit)
        await ws.prepare(request)
        visitor = Visitor(request.remote or "unknown", next(self._connections))
        session = WebchatSession(ws, self.chat, self._deliver, ids=self.ids, visitor=visitor,
                                 transport=request.transport, turn=self._turn, tap=self._tap)
        self._sessions.add(session)
        try:
            await session.run()
        finally:
            self._sessions.discard(session)
        return ws

    async def _close_sockets(self, app: web.Application | None = None) -> None:
        self._turn.write_all()  # what this turn queued goes out before the close frames
        closing = [
            session.ws.close(code=1001, message=b"webchat stopping") for session in self._sessions
        ]
        await asyncio.gather(*closing, return_exceptions=True)
