"""The Matrix adapter: one application service on one homeserver, through mautrix-python.

The homeserver pushes every event of the bridge's rooms to the push listener
(`adapters.matrix.transactions`), which hands each one to `_on_event`: an invite of the
bridge user is accepted, member events keep the display names, and a person's message goes
to the core as an `Inbound`. Events of the bridge's own users (the bridge user and every
bot's puppet) are never relayed back, so the filter is complete by namespace and the core
need not look each message up (`echoes_own_posts=False`).

Each bot speaks as its own user (`adapters.matrix.puppets`); a streamed reply is one event
edited with `m.replace`. Sending never sleeps on a 429: the outbox waits `retry_after_ms`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any, ClassVar

import aiohttp
from mautrix.api import Method, Path
from mautrix.appservice import AppServiceAPI, IntentAPI
from mautrix.appservice.state_store import ASStateStore
from mautrix.client.state_store import MemoryStateStore
from mautrix.errors import IntentError, MatrixError
from pydantic import BaseModel

from adapters.matrix.config import MatrixAccountConfig
from adapters.matrix.errors import RateLimitedResponse, send_error, start_error
from adapters.matrix.inbound import CHANNEL_TYPE, to_inbound
from adapters.matrix.members import Members, localpart
from adapters.matrix.outbound import edit_content, message_content, with_label
from adapters.matrix.puppets import Puppets
from adapters.matrix.send_journal import begin, journal_key, shown, txn_id
from adapters.matrix.transactions import PushListener
from bridge.core.adapter import Adapter, Capabilities, Diagnosis, InboundSink
from bridge.core.model import Outbound, OutboundKind, PlatformRef
from bridge.core.outbox import text_digest
from bridge.logs import REDACTOR, protect_loggers
from bridge.text import PLATFORM_LIMITS, Directory, StaticDirectory, matrix_html

if TYPE_CHECKING:
    from bridge.web.server import WebServer

log = logging.getLogger(__name__)

_API_LOGGERS = ("mautrix", "adapters.matrix")
PING_ATTEMPTS = 3


class _StateStore(MemoryStateStore, ASStateStore):
    """mautrix's memory state store with the application-service part (who is registered)."""

    def __init__(self) -> None:
        MemoryStateStore.__init__(self)
        ASStateStore.__init__(self)


class MatrixAdapter(Adapter):
    """Relays the rooms one application service's bridge user is in."""

    channel_type: ClassVar[str] = CHANNEL_TYPE
    capabilities: ClassVar[Capabilities] = Capabilities(
        dialect="matrix",
        max_length=PLATFORM_LIMITS["matrix"],
        can_edit=True,
        custom_sender=True,
        threads=True,
        min_edit_interval=0.5,
        echoes_own_posts=False,
    )
    config_model: ClassVar[type[BaseModel]] = MatrixAccountConfig

    settings: MatrixAccountConfig

    def __init__(self, account: str, config: BaseModel, sink: InboundSink, *,
                 web: WebServer | None = None) -> None:
        super().__init__(account, config, sink, web=web)
        self._session: aiohttp.ClientSession | None = None
        self._api: AppServiceAPI | None = None
        self._listener: PushListener | None = None
        self._puppets: Puppets | None = None
        self._members = Members()
        self._room_ids: dict[str, str] = {}
        """A binding's chat (a room id or an #alias) → the room id."""
        self._chats: dict[str, str] = {}
        """A room id → the chat a binding names it by."""

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        config = self.settings
        REDACTOR.add([config.as_token.get_secret_value(), config.hs_token.get_secret_value()])
        protect_loggers(_API_LOGGERS)
        session = aiohttp.ClientSession(
            response_class=RateLimitedResponse,
            timeout=aiohttp.ClientTimeout(total=config.request_timeout))
        api = AppServiceAPI(
            base_url=config.homeserver, bot_mxid=config.bot_user_id,
            token=config.as_token.get_secret_value(), state_store=_StateStore(),
            client_session=session, log=logging.getLogger("mautrix.api"),
            default_retry_count=0)
        failure = None
        try:
            await api.bot_intent().whoami()
        except (MatrixError, aiohttp.ClientError, TimeoutError) as exc:
            failure = start_error(exc, self.account, config.homeserver)
        if failure is not None:
            await session.close()
            raise failure
        self._session, self._api = session, api
        self._puppets = Puppets(config, api)
        await self._resolve_bound_rooms()
        listener = PushListener(self.channel, config.listen, config.hs_token.get_secret_value(),
                                self.state, self._on_event)
        try:
            await listener.start()
        except OSError as exc:
            await self.stop()
            raise start_error(exc, self.account, config.homeserver) from None
        self._listener = listener
        log.info("matrix:%s is %s; the homeserver pushes to %s (listening on %s)",
                 self.account, config.bot_user_id, config.push_url, config.listen)
        await self._ping()

    async def _resolve_bound_rooms(self) -> None:
        """Room ids for the bindings' #aliases, and a join of every bound room (an invite
        that came while the bridge was down is accepted here too)."""
        bot = self._bot
        for chat in sorted(self.bound_chats):
            room_id = chat
            if chat.startswith("#"):
                try:
                    room_id = str((await bot.resolve_room_alias(chat)).room_id)
                except (MatrixError, aiohttp.ClientError, TimeoutError) as exc:
                    log.warning("matrix:%s cannot resolve the bound alias %s: %s",
                                self.account, chat, exc)
                    continue
            self._room_ids[chat], self._chats[room_id] = room_id, chat
            try:
                await bot.join_room(room_id, max_retries=0)
            except (MatrixError, aiohttp.ClientError, TimeoutError) as exc:
                log.info("matrix:%s is not in the bound room %s yet (%s): invite %s to it",
                         self.account, chat, exc, self.settings.bot_user_id)

    async def _ping(self) -> None:
        """Ask the homeserver to reach the push listener now: a backlog of transactions it
        kept while the bridge was down is sent at once, not after its growing retry delay."""
        failure: BaseException | None = None
        for attempt in range(1, PING_ATTEMPTS + 1):
            try:
                await self._bot.appservice_ping(self.settings.appservice_id)
                return
            except (MatrixError, aiohttp.ClientError, TimeoutError) as exc:
                failure = exc
            if attempt < PING_ATTEMPTS:  # the homeserver's kept connection may be stale
                await asyncio.sleep(0.5 * attempt)
        log.warning("matrix:%s: the homeserver could not reach the push listener at %s (%s); "
                    "check the registration's url", self.account, self.settings.push_url,
                    failure)

    async def stop(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.stop()
        session, self._session = self._session, None
        self._api = None
        if session is not None:
            await session.close()
            log.info("matrix:%s stopped", self.account)

    def health(self) -> str | None:
        if self.started and self._listener is None:
            return "the push listener is not running"
        return super().health()

    async def diagnose(self) -> list[Diagnosis]:
        from adapters.matrix.doctor import diagnose

        return await diagnose(self.account, self.settings)

    @property
    def _bot(self) -> IntentAPI:
        if self._api is None:
            raise RuntimeError(f"matrix:{self.account} is not started")
        return self._api.bot_intent()

    @property
    def listener(self) -> PushListener | None:
        return self._listener

    # -- inbound -----------------------------------------------------------------------

    async def _on_event(self, event: dict[str, Any]) -> None:
        room_id, sender = event.get("room_id"), event.get("sender")
        if not isinstance(room_id, str) or not isinstance(sender, str):
            return
        if event.get("type") == "m.room.member":
            await self._on_member(room_id, event)
            return
        assert self._puppets is not None
        if self._puppets.owns(sender):
            return
        self._note_room(room_id)
        chat = self._chats.get(room_id, room_id)
        name = await self._sender_name(room_id, sender)
        inbound = to_inbound(event, account=self.account, chat_id=chat, sender_name=name,
                             name_of=lambda user_id: self._name_of(room_id, user_id))
        if inbound is not None:
            await self.sink(inbound)

    async def _on_member(self, room_id: str, event: dict[str, Any]) -> None:
        self._members.on_member_event(event)
        content = event.get("content") or {}
        if event.get("state_key") != self.settings.bot_user_id:
            return
        if content.get("membership") == "invite":
            try:
                await self._bot.join_room(room_id, max_retries=0)
            except (MatrixError, aiohttp.ClientError, TimeoutError) as exc:
                log.warning("matrix:%s could not join %s on invite: %s",
                            self.account, room_id, exc)
                return
            log.info("matrix:%s joined %s on %s's invite", self.account, room_id,
                     event.get("sender"))
            self._note_room(room_id, once=False)
        elif content.get("membership") in ("leave", "ban") and self._puppets is not None:
            self._puppets.forget_room(room_id)

    def _note_room(self, room_id: str, *, once: bool = True) -> None:
        """Log each room once, with the id to bind (a room bound by alias is bound); a room
        just joined is logged even if seen before."""
        chat = self._chats.get(room_id, room_id)
        if not once:
            self.first_sight(chat)
        self.note_chat(chat, f"sees room {room_id}", once=once)

    async def _sender_name(self, room_id: str, user_id: str) -> str:
        known = self._members.name(room_id, user_id)
        if known is not None:
            return known
        name = None
        try:
            state = await self._bot.api.request(
                Method.GET, Path.v3.rooms[room_id].state["m.room.member"][user_id])
            name = state.get("displayname") if isinstance(state, dict) else None
        except (MatrixError, aiohttp.ClientError, TimeoutError) as exc:
            log.debug("matrix:%s: no member state for %s in %s: %s",
                      self.account, user_id, room_id, exc)
        self._members.remember(room_id, user_id, name if isinstance(name, str) else None)
        return self._members.name(room_id, user_id) or localpart(user_id)

    def _name_of(self, room_id: str, user_id: str) -> str | None:
        named = self._puppets.name_of(user_id) if self._puppets is not None else None
        return named or self._members.name(room_id, user_id)

    def directory(self, chat_id: str) -> Directory | None:
        room_id = self._room_ids.get(chat_id, chat_id)
        known = self._members.ids_by_name(room_id)
        if self._puppets is not None:
            known.update(self._puppets.known())
        return StaticDirectory(known)

    # -- outbound ----------------------------------------------------------------------

    async def send(self, out: Outbound) -> PlatformRef:
        room_id = await self._room_id(out.binding.chat)
        thread = out.thread_id or out.binding.thread
        reply_to = out.reply_to if out.reply_to and out.reply_to.startswith("$") else None
        intent, text, html = await self._as_sender(out, room_id)
        content = message_content(text, html, msgtype=_msgtype(out), thread_id=thread,
                                  reply_to=reply_to if thread is None else None)
        key = journal_key(out)
        earlier = await begin(self.state, key, text) if key is not None else None
        event_id = await self._put(intent, room_id, content, "send", txn_id(key))
        if key is not None and earlier is not None and earlier != text_digest(text):
            # A retry, whose first attempt may have landed with older text: show this one.
            await self._put(intent, room_id,
                            edit_content(event_id, text, html, msgtype=_msgtype(out)), "edit")
            await shown(self.state, key, text)
        return PlatformRef(chat_id=room_id, message_id=event_id, thread_id=thread)

    async def edit(self, ref: PlatformRef, out: Outbound) -> None:
        room_id = await self._room_id(ref.chat_id)
        intent, text, html = await self._as_sender(out, room_id)
        content = edit_content(ref.message_id, text, html, msgtype=_msgtype(out))
        await self._put(intent, room_id, content, "edit")

    async def _as_sender(self, out: Outbound, room_id: str) -> tuple[IntentAPI, str, str]:
        """The user to post as, and the text and HTML to post: a bot's reply as the bot's
        own user; a person's card or a notice as the bridge user, the name leading."""
        html = matrix_html(out.text, self.directory(room_id))
        assert self._puppets is not None
        if out.sender_label and not out.from_human and out.kind is not OutboundKind.SYSTEM:
            try:
                return await self._puppets.intent(out.sender_label, room_id), out.text, html
            except (IntentError, MatrixError, aiohttp.ClientError, TimeoutError) as exc:
                error = send_error(exc, f"ready {out.sender_label}'s user")
                if error.transient:
                    raise error from None
                log.warning("matrix:%s: %s cannot post in %s (%s); the bridge user posts "
                            "with the name", self.account, out.sender_label, room_id, error)
        text, html = with_label(out.sender_label, out.text, html)
        return self._bot, text, html

    async def _put(self, intent: IntentAPI, room_id: str, content: dict[str, Any],
                   action: str, txn_id: str | None = None) -> str:
        path = Path.v3.rooms[room_id].send["m.room.message"][txn_id or uuid.uuid4().hex]
        try:
            answer = await intent.api.request(Method.PUT, path, content,
                                              metrics_method="sendMessageEvent")
        except (MatrixError, aiohttp.ClientError, TimeoutError) as exc:
            raise send_error(exc, action) from None
        return str(answer["event_id"])

    async def _room_id(self, chat: str) -> str:
        """The room id of a binding's chat (resolving an #alias once)."""
        found = self._room_ids.get(chat)
        if found is not None:
            return found
        if not chat.startswith("#"):
            return chat
        try:
            room_id = str((await self._bot.resolve_room_alias(chat)).room_id)
        except (MatrixError, aiohttp.ClientError, TimeoutError) as exc:
            raise send_error(exc, f"resolve {chat}") from None
        self._room_ids[chat], self._chats[room_id] = room_id, chat
        return room_id


def _msgtype(out: Outbound) -> str:
    return "m.notice" if out.kind is OutboundKind.SYSTEM else "m.text"
