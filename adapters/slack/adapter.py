"""The Slack adapter: one app in one workspace, driven by slack-bolt.

Start asks `auth.test` who the app is (its bot ids and scopes), builds the Bolt app around
the adapter's one `AsyncWebClient`, and then receives either over Socket Mode or on an HTTP
route of the bridge's web server. Either way Bolt only acks and queues; one worker relays
the queue in order: a redelivered event is dropped by its event id (kept in the store, so a
restart or a second instance drops it too), the app's own messages by its bot id, and the
rest becomes `Inbound`s. Sending never sleeps on a 429 itself, except that edits wait their
turn in the workspace's `chat.update` pace: the core's outbox owns retries and order, and
every rate limit becomes a `TransientSendError(retry_after=…)`.

A bot's question (`Outbound.card`) is posted with Block Kit buttons (`adapters.slack.cards`).
A press is acked at once, outside the event queue (a press must not wait behind a backlog
of messages, and Slack fails it in front of the person after 3 s), then settled by the core
(`self.taps`); the person hears the outcome privately (`chat.postEphemeral`), and "Answer in
my own words" opens a modal whose submission is settled the same way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import aiohttp
from pydantic import BaseModel
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from adapters.slack.bolt_app import ACK_BUDGET, PayloadKind, build_app
from adapters.slack.cards import (
    ANSWER_BLOCK,
    MAX_INPUT_ERROR,
    OwnWordsMetadata,
    Press,
    Submission,
    card_blocks,
    own_words_view,
    read_press,
    read_submission,
    shorten,
)
from adapters.slack.commands import (
    COMMAND_PREFIX,
    PendingCommand,
    addressed_command,
    command_message_id,
    response_type,
    state_key,
)
from adapters.slack.config import SlackAccountConfig
from adapters.slack.errors import (
    CALL_ERRORS,
    SlackStartError,
    describe,
    is_gone,
    is_rate_limited,
    retry_after_seconds,
    send_error,
)
from adapters.slack.events_route import EventsRoute
from adapters.slack.inbound import (
    CHANNEL_TYPE,
    SlackMessage,
    bot_label,
    command_inbound,
    is_bot,
    message_of,
    sender_id,
    to_inbound,
)
from adapters.slack.outbound import MAX_TEXT, post_fields, shown_text
from adapters.slack.pacing import Pacer
from adapters.slack.people import People, PeopleDirectory
from adapters.slack.redaction import protect_tokens
from adapters.slack.socket_mode import SocketConnection
from adapters.slack.startup import Identity, identify, scope_warnings
from bridge.background import Background
from bridge.core.adapter import Adapter, Capabilities, Diagnosis, InboundSink
from bridge.core.model import Outbound, OutboundKind, PlatformRef, Sender
from bridge.core.outage import OutageTracker
from bridge.core.reconnect import Retrier
from bridge.core.taps import Tap, TapReply
from bridge.retry import Backoff
from bridge.store import transient
from bridge.store.pacing import Budget
from bridge.text.render_slack import escape_slack

if TYPE_CHECKING:
    from bridge.web.server import WebServer

log = logging.getLogger(__name__)

Payload = tuple[PayloadKind, dict[str, Any], "asyncio.Future[None]"]
"""One queued payload and the future its listener waits on (the ack follows it)."""

DRAIN_SECONDS = 5.0
"""How long `stop()` waits for acked events still in the queue to be relayed."""


class SlackAdapter(Adapter):
    """Relays the channels one Slack app is in; bots post under their own names."""

    channel_type: ClassVar[str] = CHANNEL_TYPE
    capabilities: ClassVar[Capabilities] = Capabilities(
        dialect="slack",
        max_length=MAX_TEXT,
        can_edit=True,
        can_delete=True,
        custom_sender=True,
        threads=True,
        typing=False,
        min_edit_interval=1.5,
        cards=True,
        replies=False,  # a reply is a thread here, not a reference to one message
        # `Identity.wrote` drops every post of the app by id: its bot id (posts, cards,
        # command answers) or its bot user, edits and deletes of them included.
        echoes_own_posts=False,
    )
    config_model: ClassVar[type[BaseModel]] = SlackAccountConfig
    settings: SlackAccountConfig

    def __init__(
        self,
        account: str,
        config: BaseModel,
        sink: InboundSink,
        *,
        web: WebServer | None = None,
    ) -> None:
        super().__init__(account, config, sink, web=web)
        self._session: aiohttp.ClientSession | None = None
        self._client: AsyncWebClient | None = None
        self._identity: Identity | None = None
        self._app: AsyncApp | None = None
        self._socket: SocketConnection | None = None
        self._queue: asyncio.Queue[Payload] | None = None
        self._worker = Background(self.channel)
        self._interactions = Background(f"{self.channel}:taps")
        """Presses and modal submissions being settled after their ack."""
        self._unreadable_logged = False
        self._people = People(self._slack_api, account, ttl=self.settings.name_cache_seconds)
        self.pacer = Pacer(self.settings.edits_per_minute)
        """Turns for `chat.update` across the whole workspace."""
        self.route: EventsRoute | None = None
        if self.settings.mode == "http":
            self._mount_route()

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        settings = self.settings
        secrets = [
            secret.get_secret_value()
            for secret in (settings.bot_token, settings.app_token, settings.signing_secret)
            if secret is not None
        ]
        protect_tokens(*secrets)
        self._session = aiohttp.ClientSession()
        client = AsyncWebClient(
            token=settings.bot_token.get_secret_value(),
            base_url=settings.api_base_url,
            timeout=settings.request_timeout,
            session=self._session,
        )
        try:
            self._identity = identity = await identify(client, self.account)
        except SlackStartError:
            await self.stop()
            raise
        self._client = client
        self._people.remember({"id": identity.user_id, "name": identity.name, "is_bot": True})
        for warning in scope_warnings(identity, self.account):
            log.warning(warning)
        app = build_app(client, name=self.channel, identity=identity, receive=self._receive,
                        pressed=self._pressed, submitted=self._submitted)
        self._queue = asyncio.Queue()
        self._worker.spawn(self._work(self._queue), name=f"{self.channel}:events")
        if settings.mode == "socket":
            assert settings.app_token is not None  # the config model requires it
            connection = SocketConnection(
                app,
                settings.app_token.get_secret_value(),
                account=self.account,
                ping_interval=settings.ping_interval,
                connect_timeout=settings.connect_timeout,
            )
            try:
                await connection.open()
            except SlackStartError:
                await self.stop()
                raise
            self._socket = connection
        # The loggers Bolt and slack_sdk have made since.
        protect_tokens(*secrets, loggers=[self.channel, SocketConnection.logger_name(self.account)])
        self._app = app
        log.info(
            "slack:%s connected as @%s (user %s, bot %s) in %s (%s), %s mode",
            self.account, identity.name, identity.user_id, identity.bot_id, identity.team,
            identity.team_id, settings.mode,
        )

    async def diagnose(self) -> list[Diagnosis]:
        from adapters.slack.doctor import diagnose

        return await diagnose(self.account, self.settings)

    def pacing(self, chat_id: str) -> tuple[Budget, ...]:
        """About one message a second in a channel (Slack's limit for chat.postMessage);
        edits count too. Streamed edits are also held to `edits_per_minute` for the
        workspace, within this process."""
        return (self.settings.send_limits.channel.budget(f"{self.channel}|chat:{chat_id}"),)

    def health(self) -> str | None:
        socket = self._socket
        if socket is not None and socket.health.failures:
            failures = socket.health.failures
            return f"the Socket Mode connection is down ({failures} failed attempt(s))"
        return super().health()

    async def stop(self) -> None:
        self._app = None
        socket, self._socket = self._socket, None
        if socket is not None:
            await socket.close()
        queue = self._queue
        if queue is not None:
            # Still taking what Bolt acked a moment ago (an HTTP request in flight).
            try:
                async with asyncio.timeout(DRAIN_SECONDS):
                    await queue.join()
            except TimeoutError:
                log.warning(
                    "slack:%s stopped with %d acked event(s) not relayed",
                    self.account, queue.qsize(),
                )
        self._queue = None
        await self._worker.cancel_all()
        await self._interactions.cancel_all()
        session, self._session = self._session, None
        if session is not None:
            await session.close()
            log.info("slack:%s stopped", self.account)
        self._client = None

    def _mount_route(self) -> None:
        """Add the route now: the web server takes routes only before it starts."""
        if self.web is None:
            raise ValueError(
                f"slack:{self.account} is in http mode but the bridge has no web server "
                "(turn on the web: section)"
            )
        secret = self.settings.signing_secret
        assert secret is not None  # the config model requires it in http mode
        self.route = EventsRoute(self.account, secret.get_secret_value(), lambda: self._app)
        events = self.settings.events_path(self.account)
        self.web.app.router.add_post(events, self.route.handle)
        interactivity = self.settings.interactivity_path(self.account)
        if interactivity != events:
            # Button presses and modal submissions: signed like events, read by the same app.
            self.web.app.router.add_post(interactivity, self.route.handle)

    def _slack_api(self) -> AsyncWebClient:
        if self._client is None:
            raise RuntimeError(f"slack:{self.account} is not started")
        return self._client

    @property
    def identity(self) -> Identity:
        if self._identity is None:
            raise RuntimeError(f"slack:{self.account} is not started")
        return self._identity

    def directory(self, chat_id: str) -> PeopleDirectory:
        return self._people.directory()

    # -- inbound -----------------------------------------------------------------------

    def _receive(self, kind: PayloadKind, body: dict[str, Any]) -> asyncio.Future[None]:
        """Bolt's listeners hand every payload here; the future is done once relayed."""
        relayed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._queue is None:
            log.warning("slack:%s got a %s after it stopped; it is not relayed", self.account,
                        kind)
            relayed.set_result(None)
            return relayed
        self._queue.put_nowait((kind, body, relayed))
        return relayed

    async def _work(self, queue: asyncio.Queue[Payload]) -> None:
        while True:
            kind, body, relayed = await queue.get()
            try:
                await self._relay_until_done(kind, body)
            except asyncio.CancelledError:
                queue.task_done()
                raise  # not relayed: no ack either, so Slack gives it to another connection
            if not relayed.done():
                relayed.set_result(None)
            queue.task_done()

    async def _relay_until_done(self, kind: PayloadKind, body: dict[str, Any]) -> None:
        """Relay one payload; a failure that may pass (the store or a socket) is retried
        with backoff, and only then is the payload acked.

        Acking a payload that was not relayed loses it: Slack never sends an acked envelope
        again (25 of 50 messages were lost over a 2 s Redis restart). Meanwhile Slack may
        send it again, unacked for 3 s, to this or another connection: the event's claim in
        the store lets one of them through. A failure that would repeat every time (a bug)
        is logged and acked, as retrying cannot mend it. Later payloads wait behind this
        one, so the channel's order holds."""
        async def relay() -> None:
            if kind == "command":
                await self._on_command(body)
            else:
                await self._on_event(body)

        outage = OutageTracker(f"slack:{self.account}", lost=f"cannot relay a {kind} yet",
                               back=f"relayed the {kind}", retrying="retrying until it can",
                               logger=log)
        retrier = Retrier(outage, retryable=transient, backoff=Backoff(initial=0.2, maximum=5.0),
                          describe=describe)
        try:
            await retrier.until_done(relay)
        except Exception as exc:
            log.error(
                "slack:%s could not relay a %s: %s", self.account, kind, describe(exc),
                exc_info=not isinstance(exc, CALL_ERRORS),
            )

    async def _on_event(self, body: dict[str, Any]) -> None:
        event = body.get("event")
        if not isinstance(event, dict):
            return
        event_id = body.get("event_id")
        key = f"event:{event_id}" if isinstance(event_id, str) and event_id else None
        if key is None:
            await self._relay_event(event)
            return
        # Claimed, not looked up: Slack retries an event unacked for 3 s, possibly on another
        # instance's socket while this one is still relaying it; one of them takes it.
        if not await self.state.claim(key):
            log.debug("slack:%s dropping redelivered event %s", self.account, event_id)
            return
        try:
            await self._relay_event(event)
        except BaseException:
            await self.state.unclaim(key)  # Slack's retry (or another instance) may redo it
            raise
        await self.state.done(key)  # only now: a crash before this gets it redelivered

    async def _relay_event(self, event: dict[str, Any]) -> None:
        if event.get("type") == "message":
            found = message_of(event)
            if found is not None:
                await self._on_message(found)
        elif event.get("type") == "member_joined_channel":
            if event.get("user") == self.identity.user_id and event.get("channel"):
                await self._note_channel(str(event["channel"]), joined=True)

    async def _on_message(self, found: SlackMessage) -> None:
        message = found.message
        if self.identity.wrote(message):
            return  # the app's own post, or the edit or delete of one
        await self._note_channel(found.channel)
        text = str(message.get("text") or "")
        await self._people.learn_text(text)
        sender = await self._sender(message)
        command = None
        if not (found.is_edit or found.is_delete):
            words = self.commands.enabled().values()
            command = addressed_command(text, self.identity.user_id, words)
        inbound = to_inbound(
            found, account=self.account, sender=sender, directory=self._people.directory(),
            text=command,
        )
        if inbound is not None:
            await self.sink(inbound)

    async def _sender(self, message: Mapping[str, Any]) -> Sender:
        """Who wrote it: a bot by the name its message shows, a person by their display name."""
        user = message.get("user")
        profile = message.get("user_profile")
        if user and isinstance(profile, Mapping):
            self._people.remember({**profile, "id": user})
        bot = is_bot(message)
        label = bot_label(message) if bot else None
        if label is None and user:
            person = await self._people.person(str(user))
            label = person.name if person is not None else None
            bot = bot or bool(person is not None and person.is_bot)
        ident = sender_id(message)
        return Sender(id=ident, name=label or ident or "unknown", is_bot=bot)

    async def _on_command(self, payload: dict[str, Any]) -> None:
        channel = str(payload.get("channel_id") or "")
        command = str(payload.get("command") or "")
        if not channel or not command or not payload.get("trigger_id"):
            return
        message_id = command_message_id(payload)
        pending = None
        if payload.get("response_url"):
            pending = PendingCommand(
                str(payload["response_url"]), channel, response_type(command, self.commands)
            )
            await self.state.put(state_key(message_id), pending.to_record())
        await self._note_channel(channel)
        if channel not in self.bound_chats:
            if pending is not None:
                problem = await self._respond(
                    pending, "This channel is not connected to a BCN group. Bind it in the "
                    f'bridge config with `chat: "{channel}"`.',
                )
                if problem is not None:
                    log.info("slack:%s could not answer %s in unbound channel %s (%s)",
                             self.account, command, channel, problem)
            return
        user = str(payload.get("user_id") or "")
        await self._people.learn_text(str(payload.get("text") or ""))
        person = await self._people.person(user) if user else None
        name = person.name if person is not None else str(payload.get("user_name") or user)
        inbound = command_inbound(
            payload, account=self.account, sender=Sender(id=user, name=name),
            directory=self._people.directory(),
        )
        await self.sink(inbound)

    async def _note_channel(self, channel: str, *, joined: bool = False) -> None:
        """Log each channel once (and whenever the app is added to one), so people can find
        the id to put in a binding. The name costs an API call, so only then is it asked."""
        if not self.first_sight(channel) and not joined:
            return
        name = await self._people.channel_name(channel)
        shown = f"#{name}" if name else "?"
        verb = "was added to" if joined else "sees"
        self.note_chat(channel, f'{verb} channel {channel} "{shown}"', once=False)

    # -- outbound ----------------------------------------------------------------------

    async def send(self, out: Outbound) -> PlatformRef:
        if (out.reply_to and out.reply_to.startswith(COMMAND_PREFIX) and out.parts == 1
                and out.card is None):  # a card is redrawn later: it needs a message to edit
            answered = await self._answer_command(out)
            if answered is not None:
                return answered
        channel = out.binding.chat
        thread = out.thread_id or out.binding.thread
        fields = post_fields(out, self.identity.can_customize, self.settings)
        if out.card is not None:
            fields["blocks"] = card_blocks(fields["text"], out.card)
        try:
            response = await self._slack_api().chat_postMessage(
                channel=channel, thread_ts=thread, **fields
            )
        except CALL_ERRORS as exc:
            raise send_error(exc, "chat.postMessage") from exc
        data = response.data if isinstance(response.data, dict) else {}
        return PlatformRef(
            chat_id=str(data.get("channel") or channel),
            message_id=str(data.get("ts") or ""),
            thread_id=thread,
        )

    async def edit(self, ref: PlatformRef, out: Outbound) -> None:
        if ref.message_id.startswith(COMMAND_PREFIX):
            return  # an answer given through a response_url has no message to edit
        await self.pacer.wait()
        text = shown_text(out, self.identity.can_customize)
        # A card is redrawn whole (its buttons go once it is settled); other edits leave
        # the message's blocks alone, and it has none.
        blocks = card_blocks(text, out.card) if out.card is not None else None
        try:
            await self._slack_api().chat_update(
                channel=ref.chat_id, ts=ref.message_id, text=text, blocks=blocks,
            )
        except CALL_ERRORS as exc:
            if is_rate_limited(exc):
                self.pacer.hold(retry_after_seconds(getattr(exc, "response", None)) or 1.0)
            if is_gone(exc) and out.kind is OutboundKind.FINAL:
                # Someone deleted the streamed preview: the finished reply is posted anew
                # rather than lost with it.
                log.info("slack:%s a reply's preview was deleted; posting the reply anew",
                         self.account)
                await self.send(out)
                return
            raise send_error(exc, "chat.update") from exc

    async def delete(self, ref: PlatformRef) -> None:
        if ref.message_id.startswith(COMMAND_PREFIX):
            return
        try:
            await self._slack_api().chat_delete(channel=ref.chat_id, ts=ref.message_id)
        except CALL_ERRORS as exc:
            if is_gone(exc):
                return
            raise send_error(exc, "chat.delete") from exc

    async def _answer_command(self, out: Outbound) -> PlatformRef | None:
        """Answer a slash command through its response_url; None when that cannot be done
        (no command, already answered, the URL expired), and the answer is posted instead."""
        assert out.reply_to is not None
        pending = PendingCommand.from_record(await self.state.get(state_key(out.reply_to)))
        if pending is None:
            return None
        problem = await self._respond(pending, out.text)
        if problem is not None:
            log.info(
                "slack:%s could not answer %s through its response_url (%s); posting the "
                "answer in the channel", self.account, out.reply_to, problem,
            )
            return None
        await self.state.put(state_key(out.reply_to), {})
        return PlatformRef(chat_id=pending.channel, message_id=out.reply_to)

    async def _respond(self, pending: PendingCommand, text: str) -> str | None:
        """POST to a command's response_url; what went wrong, or None when Slack took it."""
        hook = AsyncWebhookClient(
            pending.response_url, timeout=self.settings.request_timeout, session=self._session
        )
        try:
            response = await hook.send(text=text, response_type=pending.response_type)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return describe(exc)
        if response.status_code == 200:
            return None
        return f"HTTP {response.status_code} {str(response.body)[:80]}"

    # -- cards: presses and the own-words modal ------------------------------------------

    def _pressed(self, body: dict[str, Any]) -> None:
        """A press, already acked: settled in the background (Bolt must return now)."""
        self._interactions.spawn(self._press(body), name=f"{self.channel}:press")

    async def _press(self, body: dict[str, Any]) -> None:
        """Settle a press and tell the person privately; never raises (a failure is logged
        and the person told, when they can be)."""
        press = read_press(body)
        if press is None:
            self._unreadable("a block_actions payload without a user, channel or value")
            return
        try:
            sender = await self._person(press.user_id, press.user_name)
            reply = await self._tap(Tap(
                channel_type=self.channel_type, account=self.account, chat_id=press.channel,
                sender=sender, data=press.data, thread_id=press.thread, tap_id=press.tap_id,
            ))
            if reply.wants_own_words:
                await self._open_own_words(press, reply)
                return
            await self._tell(press.channel, press.user_id, press.thread, reply.text)
        except Exception as exc:
            log.error("slack:%s could not settle a press on a card in %s: %s", self.account,
                      press.channel, describe(exc), exc_info=not isinstance(exc, CALL_ERRORS))
            await self._tell(press.channel, press.user_id, press.thread,
                             "Something went wrong with that button; please try again.")

    async def _open_own_words(self, press: Press, reply: TapReply) -> None:
        """Open the modal for an answer in one's own words (with the press's trigger, good
        for 3 s); when Slack will not, the person is told to type the answer instead."""
        metadata = OwnWordsMetadata(press.data, press.channel, press.thread)
        try:
            await self._slack_api().views_open(trigger_id=press.trigger_id,
                                         view=own_words_view(reply.card, metadata))
        except CALL_ERRORS as exc:
            log.warning("slack:%s could not open the answer box in %s: %s", self.account,
                        press.channel, describe(exc))
            typed = f" as `Re: {reply.card.request_id}: …`" if reply.card is not None else ""
            await self._tell(press.channel, press.user_id, press.thread,
                             f"Could not open the answer box; type your answer{typed}.")

    async def _submitted(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """An own-words answer, settled within the ack's budget when it can be, so that a
        refusal shows under the modal's input; past the budget the modal closes and the
        outcome follows as an ephemeral message. What to ack with, or None (close it)."""
        submission = read_submission(body)
        if submission is None:
            self._unreadable("a view_submission without a user or its card's metadata")
            return None
        ack: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()
        self._interactions.spawn(self._own_words(submission, ack),
                                 name=f"{self.channel}:own-words")
        await asyncio.wait({ack}, timeout=ACK_BUDGET)
        if not ack.done():
            ack.set_result(None)  # Slack's 3 s are nearly up: close the modal, tell later
        return ack.result()

    async def _own_words(self, submission: Submission,
                         ack: asyncio.Future[dict[str, Any] | None]) -> None:
        """Settle an own-words answer; say how it went: accepted, privately in the chat;
        refused, under the modal's input while its ack is still to be sent, else privately.
        Never raises."""
        metadata = submission.metadata
        try:
            sender = await self._person(submission.user_id, submission.user_name)
            reply = await self._tap(Tap(
                channel_type=self.channel_type, account=self.account,
                chat_id=metadata.channel, sender=sender, data=metadata.data,
                thread_id=metadata.thread, text=submission.text,
                tap_id=f"view-{submission.view_id}" if submission.view_id else "",
            ))
            text, accepted = reply.text, reply.accepted
        except Exception as exc:
            log.error("slack:%s could not settle an own-words answer in %s: %s", self.account,
                      metadata.channel, describe(exc), exc_info=not isinstance(exc, CALL_ERRORS))
            text, accepted = "Something went wrong; please try again.", False
        if not accepted and not ack.done():
            ack.set_result({"response_action": "errors",
                            "errors": {ANSWER_BLOCK: shorten(text, MAX_INPUT_ERROR)}})
            return
        if not ack.done():
            ack.set_result(None)
        await self._tell(metadata.channel, submission.user_id, metadata.thread, text)

    async def _tap(self, tap: Tap) -> TapReply:
        if self.taps is None:
            return TapReply("Answers by button are not on here.")
        return await self.taps(tap)

    async def _person(self, user_id: str, fallback: str) -> Sender:
        """Who pressed, by the payload's user id (Slack's word, never the button's): named as
        their messages are, by the workspace's display name."""
        person = await self._people.person(user_id)
        name = person.name if person is not None else fallback or user_id
        return Sender(id=user_id, name=name)

    async def _tell(self, channel: str, user: str, thread: str | None, text: str) -> None:
        """Say `text` to one person in the chat, seen by nobody else; a failure is logged."""
        try:
            await self._slack_api().chat_postEphemeral(
                channel=channel, user=user, text=escape_slack(text), thread_ts=thread,
            )
        except CALL_ERRORS as exc:
            log.warning("slack:%s could not tell %s in %s how their press went (%s): %s",
                        self.account, user, channel, text, describe(exc))

    def _unreadable(self, what: str) -> None:
        """An interaction the adapter cannot read: logged once at warning, later at debug."""
        level = logging.DEBUG if self._unreadable_logged else logging.WARNING
        self._unreadable_logged = True
        log.log(level, "slack:%s ignored %s", self.account, what)
