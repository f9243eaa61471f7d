"""The Telegram adapter: one bot account, driven by python-telegram-bot.

PTB's `Application` is started piecewise (never `run_polling()`, which would own the event
loop and the signals): `initialize` (getMe), `start`, then either the updater's long
polling or a webhook route on the bridge's web server. Both feed the same update queue, and
one handler turns updates into `Inbound`s in order. Sending never sleeps on a 429: the
core's outbox owns waiting and ordering, so PTB runs without a rate limiter and every
`RetryAfter` becomes a `TransientSendError(retry_after=…)`.

A bot's question is a card (`adapters.telegram.cards`): an inline keyboard under the text,
always posted by the main bot (Telegram sends a button's `callback_query` to the bot that
posted it, and only the main bot receives updates). Presses and own-words answers are
`adapters.telegram.taps`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pydantic import BaseModel
from telegram import Bot, Chat, InlineKeyboardMarkup, Message, ReplyParameters, Update
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, Forbidden, TelegramError
from telegram.ext import Application, ApplicationBuilder, ContextTypes, TypeHandler
from telegram.request import HTTPXRequest

from adapters.telegram.cards import card_text, keyboard
from adapters.telegram.config import TelegramAccountConfig
from adapters.telegram.errors import (
    is_not_editable,
    is_not_modified,
    is_parse_error,
    send_error,
    start_error,
)
from adapters.telegram.inbound import CHANNEL_TYPE, chat_message, chat_title, to_inbound
from adapters.telegram.outbound import (
    MAX_TEXT,
    visible_text,
    with_plain_prefix,
    with_prefix,
)
from adapters.telegram.poll_lease import PollLease, UpdateJournal
from adapters.telegram.polling import PollingRequest, polling_outage, quiet_updater_error
from adapters.telegram.puppets import PuppetBots
from adapters.telegram.redaction import protect_tokens, redact
from adapters.telegram.startup import privacy_warning, register_commands
from adapters.telegram.taps import CardTaps
from adapters.telegram.webhook import BadUpdate, WebhookRoute
from bridge.core.adapter import (
    Adapter,
    Capabilities,
    Diagnosis,
    InboundSink,
    PermanentSendError,
)
from bridge.core.model import Outbound, PlatformRef
from bridge.store.pacing import Budget

if TYPE_CHECKING:
    from bridge.web.server import WebServer

log = logging.getLogger(__name__)

ALLOWED_UPDATES = (
    Update.MESSAGE,
    Update.EDITED_MESSAGE,
    Update.CHANNEL_POST,
    Update.EDITED_CHANNEL_POST,
    Update.MY_CHAT_MEMBER,
    Update.CALLBACK_QUERY,
)

T = TypeVar("T")
TelegramCall = Callable[[str, str | None], Awaitable[T]]
"""One Bot API call given (text, parse_mode), so it can be repeated as plain text."""


class TelegramAdapter(Adapter):
    """Relays one Telegram bot account; BCN bots with a puppet token post as themselves."""

    channel_type: ClassVar[str] = CHANNEL_TYPE
    capabilities: ClassVar[Capabilities] = Capabilities(
        dialect="telegram",
        max_length=MAX_TEXT,
        can_edit=True,
        custom_sender=False,
        threads=True,
        typing=True,
        min_edit_interval=1.0,
        cards=True,
        # Left on: the filter by author id (`_own_ids`, the main bot and its puppets) cannot
        # see who wrote a post in a channel, which Telegram delivers signed by the channel
        # (`sender_chat`, no `from_user`): a puppet's reply there may come back, and only
        # the core's look-up by message id knows it.
        echoes_own_posts=True,
    )
    config_model: ClassVar[type[BaseModel]] = TelegramAccountConfig
    settings: TelegramAccountConfig

    def __init__(
        self,
        account: str,
        config: BaseModel,
        sink: InboundSink,
        *,
        web: WebServer | None = None,
    ) -> None:
        super().__init__(account, config, sink, web=web)
        settings = self.settings
        self._health = polling_outage(account)
        self._app: Application[Any, Any, Any, Any, Any, Any] | None = None
        self._puppets = PuppetBots(
            account,
            settings.puppets,
            base_url=settings.bot_api_url,
            base_file_url=settings.bot_file_url,
            connect_timeout=settings.connect_timeout,
            read_timeout=settings.read_timeout,
        )
        self._own_ids: frozenset[int] = frozenset()
        self._accepting = False
        self._requests: list[HTTPXRequest] = []
        self._poll_lease: PollLease | None = None
        self._journal: UpdateJournal | None = None
        self._card_taps = CardTaps(self, lambda: self._bot)
        if settings.mode == "webhook":
            self._mount_webhook()

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        config = self.settings
        secrets = [config.token, *config.puppets.values()]
        if config.secret_token is not None:
            secrets.append(config.secret_token)
        protect_tokens(*(secret.get_secret_value() for secret in secrets))
        self._journal = UpdateJournal(self.state)
        app = self._build_application()
        app.add_handler(TypeHandler(Update, self._on_update))
        app.add_error_handler(self._on_handler_error)
        failure = None
        try:
            await app.initialize()
        except TelegramError as exc:
            failure = start_error(exc, self.account)
        if failure is not None:
            # Raised outside the `except`: PTB's message for a rejected token contains the
            # token, and a chained exception would carry it into every traceback.
            for request in self._requests:
                await request.shutdown()
            raise failure
        self._app = app
        bot = app.bot
        log.info("telegram:%s connected as @%s (id %s)", self.account, bot.username, bot.id)
        if warning := privacy_warning(bot, self.account):
            log.warning(warning)
        await register_commands(bot, self.account, self.commands)
        await self._puppets.start()
        self._own_ids = frozenset({bot.id, *self._puppets.ids})
        await app.start()
        self._accepting = True
        if config.mode == "polling":
            self._poll_lease = PollLease(
                self.state, self.account,
                start_polling=self._start_polling, stop_polling=self._stop_polling,
            )
            await self._poll_lease.start()
        else:
            await self._register_webhook(bot)

    async def diagnose(self) -> list[Diagnosis]:
        from adapters.telegram.doctor import diagnose

        return await diagnose(self.account, self.settings)

    def pacing(self, chat_id: str) -> tuple[Budget, ...]:
        """The Bot API's limits: one chat, the whole bot, and for a group (a negative id)
        the group's own. Puppet bots post under the same budgets: slower than each bot
        would need to be, never faster than the one that posts most."""
        limits, account = self.settings.send_limits, self.channel
        budgets = (limits.chat.budget(f"{account}|chat:{chat_id}"),
                   limits.bot.budget(f"{account}|bot"))
        if chat_id.startswith("-"):
            budgets += (limits.group.budget(f"{account}|group:{chat_id}"),)
        return budgets

    def health(self) -> str | None:
        if self._health.is_down:
            return (f"polling the Bot API fails ({self._health.failures} attempt(s) in a row); "
                    "retrying")
        return super().health()

    async def _start_polling(self) -> None:
        """This instance holds the poll lease: relay what a dead poller left, then poll."""
        app = self._app
        assert app is not None and app.updater is not None
        assert self._journal is not None
        for data in await self._journal.waiting():
            log.info("telegram:%s relays update %s fetched before a restart",
                     self.account, data.get("update_id"))
            await app.update_queue.put(Update.de_json(data, app.bot))
        await app.updater.start_polling(
            poll_interval=self.settings.poll_interval,
            timeout=int(self.settings.poll_timeout),
            allowed_updates=list(ALLOWED_UPDATES),
            drop_pending_updates=self.settings.drop_pending_updates,
            error_callback=quiet_updater_error(self.account),
        )

    async def _stop_polling(self) -> None:
        app = self._app
        if app is not None and app.updater is not None and app.updater.running:
            await app.updater.stop()

    async def stop(self) -> None:
        if self._poll_lease is not None:
            await self._poll_lease.stop()
            self._poll_lease = None
        app, self._app = self._app, None
        self._accepting = False
        if app is None:
            return
        if app.updater is not None and app.updater.running:
            await app.updater.stop()
        if app.running:
            await app.stop()
        await app.shutdown()
        await self._puppets.stop()
        log.info("telegram:%s stopped", self.account)

    def _build_application(self) -> Application[Any, Any, Any, Any, Any, Any]:
        config = self.settings
        timeouts = {"connect_timeout": config.connect_timeout, "read_timeout": config.read_timeout}
        api_request = HTTPXRequest(**timeouts)
        builder = (
            ApplicationBuilder()
            .token(config.token.get_secret_value())
            .base_url(config.bot_api_url)
            .base_file_url(config.bot_file_url)
            .request(api_request)
            .job_queue(None)
            .concurrent_updates(False)
        )
        self._requests = [api_request]
        if config.mode == "polling":
            assert self._journal is not None
            polling_request = PollingRequest(self._health, self._journal.keep, **timeouts)
            self._requests.append(polling_request)
            builder = builder.get_updates_request(polling_request)
        else:
            builder = builder.updater(None)
        return builder.build()

    def _mount_webhook(self) -> None:
        """Add the route now: the web server takes routes only before it starts."""
        if self.web is None:
            raise ValueError(
                f"telegram:{self.account} is in webhook mode but the bridge has no web server"
            )
        secret = self.settings.secret_token
        assert secret is not None  # the config model requires it in webhook mode
        route = WebhookRoute(self.account, secret.get_secret_value(), self._receive_webhook)
        self.web.app.router.add_post(self.settings.webhook_path(self.account), route.handle)

    async def _register_webhook(self, bot: Bot) -> None:
        config = self.settings
        assert config.secret_token is not None
        url = config.webhook_url(self.account)
        await bot.set_webhook(
            url,
            secret_token=config.secret_token.get_secret_value(),
            allowed_updates=list(ALLOWED_UPDATES),
            drop_pending_updates=config.drop_pending_updates,
        )
        log.info("telegram:%s receives updates by webhook at %s", self.account, url)

    async def _receive_webhook(self, data: dict[str, Any]) -> bool:
        app = self._app
        if app is None or not self._accepting:
            return False
        try:
            update = Update.de_json(data, app.bot)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise BadUpdate(f"{type(exc).__name__}: {exc}") from None
        await app.update_queue.put(update)
        return True

    # -- inbound -----------------------------------------------------------------------

    async def _on_update(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        await self._relay(update, context)
        # Crossed off only once relayed: a crash before this replays it (the core drops a
        # message it has relayed already).
        if self._journal is not None:
            await self._journal.done(update.update_id)

    async def _relay(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if update.my_chat_member is not None:
            self._note_chat(update.my_chat_member.chat)
        if update.callback_query is not None:
            await self._card_taps.on_callback(update.callback_query)
            return
        found = chat_message(update)
        if found is None:
            return
        message = found.message
        self._note_chat(message.chat)
        if message.from_user is not None and message.from_user.id in self._own_ids:
            return
        if await self._card_taps.own_words(message, is_edit=found.is_edit,
                                           bot_id=context.bot.id):
            return
        inbound = to_inbound(update, account=self.account, bot_username=context.bot.username)
        if inbound is None:
            return
        await self.sink(inbound)

    def _note_chat(self, chat: Chat) -> None:
        """Log each chat once, so people can find the id to put in a binding."""
        self.note_chat(str(chat.id), f'sees {chat.type} chat {chat.id} "{chat_title(chat)}"')

    async def _on_handler_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        error = context.error
        log.error(
            "telegram:%s could not relay an update: %s",
            self.account,
            redact(f"{type(error).__name__}: {error}"),
            exc_info=error if error is not None and not isinstance(error, TelegramError) else None,
        )

    # -- outbound ----------------------------------------------------------------------

    async def send(self, out: Outbound) -> PlatformRef:
        chat_id = platform_chat_id(out.binding.chat)
        thread = out.thread_id or out.binding.thread
        thread_id = int(thread) if thread and thread.lstrip("-").isdigit() else None
        reply = (
            ReplyParameters(message_id=int(out.reply_to), allow_sending_without_reply=True)
            if out.reply_to and out.reply_to.isdigit()
            else None
        )
        out, markup = self._drawn(out)

        def post(bot: Bot) -> TelegramCall[Message]:
            def call(text: str, parse_mode: str | None) -> Awaitable[Message]:
                return bot.send_message(
                    chat_id,
                    text,
                    parse_mode=parse_mode,
                    message_thread_id=thread_id,
                    reply_parameters=reply,
                    reply_markup=markup,
                )

            return call

        message = await self._as_sender(out, post, "sendMessage", puppet=out.card is None)
        return PlatformRef(
            chat_id=str(message.chat.id),
            message_id=str(message.message_id),
            thread_id=str(thread_id) if thread_id is not None else None,
        )

    async def edit(self, ref: PlatformRef, out: Outbound) -> None:
        drawn, markup = self._drawn(out)
        if drawn.card is None:
            await self._as_sender(drawn, self._editor(ref, markup), "editMessageText")
            return
        try:
            await self._as_sender(drawn, self._editor(ref, markup), "editMessageText",
                                  puppet=False)
        except PermanentSendError as exc:
            if not is_not_editable(exc):
                raise
            # A streamed reply a puppet posted became a card: the main bot cannot edit the
            # puppet's message, and buttons on it would call the puppet, which receives
            # nothing. Its text still changes; typed answers still answer it.
            log.warning("telegram:%s: a card in a puppet's message shows without buttons",
                        self.account)
            await self._as_sender(drawn, self._editor(ref, None), "editMessageText")

    @staticmethod
    def _editor(
        ref: PlatformRef, markup: InlineKeyboardMarkup | None
    ) -> Callable[[Bot], TelegramCall[Any]]:
        """`editMessageText` of `ref` as one bot, with `markup` (None sends none)."""
        chat_id = platform_chat_id(ref.chat_id)

        def change(bot: Bot) -> TelegramCall[Any]:
            def call(text: str, parse_mode: str | None) -> Awaitable[Any]:
                return bot.edit_message_text(
                    text, chat_id=chat_id, message_id=int(ref.message_id), parse_mode=parse_mode,
                    reply_markup=markup,
                )

            return call

        return change

    def _drawn(self, out: Outbound) -> tuple[Outbound, InlineKeyboardMarkup | None]:
        """`out` with its card drawn: the text with the card's line, and the keyboard while
        it is open. Once settled there is none: an edit without one takes the buttons away.
        A message without a card is left alone."""
        card = out.card
        if card is None:
            return out, None
        text = card_text(out.text, card, self.state.clock(), MAX_TEXT)
        return replace(out, text=text), keyboard(card)

    async def typing(self, chat_id: str, thread_id: str | None = None) -> None:
        """A cosmetic hint: failures are logged, never raised, and never retried."""
        try:
            await self._bot.send_chat_action(
                platform_chat_id(chat_id),
                ChatAction.TYPING,
                message_thread_id=int(thread_id) if thread_id else None,
            )
        except TelegramError as exc:
            log.debug("telegram:%s typing indicator failed: %s", self.account, redact(str(exc)))

    @property
    def _bot(self) -> Bot:
        if self._app is None:
            raise RuntimeError(f"telegram:{self.account} is not started")
        return self._app.bot

    async def _as_sender(
        self,
        out: Outbound,
        call_for: Callable[[Bot], TelegramCall[T]],
        action: str,
        *,
        puppet: bool = True,
    ) -> T:
        """Make the call as the reply's puppet if it has one (and `puppet`), else as the
        main bot.

        A puppet that cannot post here (not a member, kicked) hands the message to the
        main bot, which posts it with the name prefix: a reply is never lost to that.
        """
        puppet_bot = (
            self._puppets.for_label(out.sender_label) if out.sender_label and puppet else None
        )
        if puppet_bot is not None:
            try:
                return await self._with_plain_fallback(
                    call_for(puppet_bot), out.text, visible_text(out.text), action
                )
            except TelegramError as exc:
                if not isinstance(exc, Forbidden | BadRequest) or is_not_modified(exc):
                    raise send_error(exc, action) from exc
                log.warning(
                    "telegram:%s puppet for %r cannot %s here (%s); using the main bot",
                    self.account,
                    out.sender_label,
                    action,
                    redact(exc.message),
                )
        html_text = with_prefix(out.sender_label, out.text)
        plain_text = with_plain_prefix(out.sender_label, visible_text(out.text))
        try:
            return await self._with_plain_fallback(
                call_for(self._bot), html_text, plain_text, action
            )
        except TelegramError as exc:
            raise send_error(exc, action) from exc

    async def _with_plain_fallback(
        self, call: TelegramCall[T], html_text: str, plain_text: str, action: str
    ) -> T:
        """Send as HTML; if Telegram cannot parse it, send what a reader would have seen.

        An edit that changes nothing is a success, not an error.
        """
        try:
            return await call(html_text, ParseMode.HTML)
        except TelegramError as exc:
            if is_not_modified(exc):
                return None  # type: ignore[return-value]
            if not is_parse_error(exc):
                raise
            log.warning(
                "telegram:%s %s: Telegram refused the HTML (%s); sending plain text",
                self.account,
                action,
                exc.message,
            )
        try:
            return await call(plain_text, None)
        except TelegramError as exc:
            if is_not_modified(exc):
                return None  # type: ignore[return-value]
            raise


def platform_chat_id(chat: str) -> int | str:
    """Numeric chat ids as numbers; `@channelname` stays a string."""
    return int(chat) if chat.lstrip("-").isdigit() else chat
