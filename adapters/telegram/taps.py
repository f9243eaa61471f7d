"""Taps on a card's inline keyboard, and answers in one's own words through ForceReply.

A `callback_query` is one press: who pressed is Telegram's `callback_query.from` (signed by
Telegram, never taken from text or button data), the chat is the message's, the data is
handed to the core as it came. Every query is answered with `answerCallbackQuery` — the
private acknowledgement, and what stops the button's spinner — whatever happened.

"Answer in my own words" has no input box on Telegram, so the bridge posts a ForceReply
prompt naming the person, and remembers in the store (`AccountState`, shared by every
instance and kept over a restart) that a reply to that prompt by that person is their
answer to that card. Their reply then goes to the core as a tap with text instead of being
relayed as a chat message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from telegram import Bot, CallbackQuery, ForceReply, Message, ReplyParameters, User
from telegram.constants import ParseMode
from telegram.error import TelegramError

from adapters.telegram.cards import cut, escaped
from adapters.telegram.inbound import CHANNEL_TYPE, display_name, thread_of
from adapters.telegram.redaction import redact
from bridge.core.adapter import Adapter
from bridge.core.cards import Card
from bridge.core.model import Sender
from bridge.core.taps import Tap, TapReply

log = logging.getLogger(__name__)

NOT_BOUND = "This chat is not bound to the bridge."
NOT_HERE = "This button cannot be used here."
NO_TAPS = "Answers by button are not on here."
FAILED = "Sorry, that did not work. Try again, or type your answer."
PROMPT_QUESTION_LIMIT = 200
"""Visible characters of the question repeated in an own-words prompt."""


class CardTaps:
    """The Telegram side of taps for one account (see the module doc)."""

    def __init__(self, adapter: Adapter, bot: Callable[[], Bot]) -> None:
        self.adapter = adapter
        self._bot = bot
        self._failures = 0

    # -- a press on a button -------------------------------------------------------------

    async def on_callback(self, query: CallbackQuery) -> None:
        """Settle the press, then answer the query; never raises (an update handler that
        raised would leave the person's button spinning)."""
        try:
            text = await self._settle(query)
        except Exception as exc:
            self._failed("a button press", exc)
            text = FAILED
        await self._acknowledge(query, text)

    async def _settle(self, query: CallbackQuery) -> str:
        message = query.message
        if message is None:  # a button on an inline-mode message: not a chat's card
            return NOT_HERE
        chat_id = str(message.chat.id)
        if not self._bound(chat_id):
            return NOT_BOUND
        thread = thread_of(message) if isinstance(message, Message) else None
        data = query.data or ""  # a game's query has no data: the core refuses ""
        reply = await self._tap(chat_id, query.from_user, data, thread=thread, tap_id=query.id)
        if reply is None:
            return NO_TAPS
        if reply.wants_own_words and reply.card is not None:
            await self._prompt(message.chat.id, message.message_id, thread, query.from_user,
                               reply.card, data)
        return reply.text

    async def _acknowledge(self, query: CallbackQuery, text: str) -> None:
        try:
            await self._bot().answer_callback_query(query.id, text=cut(text),
                                                    show_alert=False)
        except TelegramError as exc:  # too old (a replay after a restart), or unreachable
            log.info("telegram:%s could not answer a button press: %s", self.adapter.account,
                     redact(str(exc)))

    # -- own words -----------------------------------------------------------------------

    async def _prompt(self, chat_id: int, card_message_id: int, thread: str | None,
                      user: User, card: Card, data: str) -> None:
        """Ask `user` to type their answer: a ForceReply aimed at them (a mention makes a
        selective ForceReply open their reply box, and only theirs)."""
        mention = f'<a href="tg://user?id={user.id}">{escaped(display_name(user))}</a>'
        question = escaped(cut(" ".join(card.question.split()), PROMPT_QUESTION_LIMIT))
        sent = await self._bot().send_message(
            chat_id,
            f"{mention}, type your answer to: {question}",
            parse_mode=ParseMode.HTML,
            message_thread_id=int(thread) if thread else None,
            reply_parameters=ReplyParameters(card_message_id, allow_sending_without_reply=True),
            reply_markup=ForceReply(selective=True, input_field_placeholder="Your answer"),
        )
        await self.adapter.state.put(prompt_key(chat_id, sent.message_id),
                                     {"user": str(user.id), "data": data})

    async def own_words(self, message: Message, *, is_edit: bool, bot_id: int) -> bool:
        """Is `message` someone's reply to their own-words prompt? Then it went to the core
        as their answer (True), and is not relayed as a chat message. Only replies to this
        bot's own messages are looked up, so other messages cost no store read."""
        replied = message.reply_to_message
        author = message.from_user
        if replied is None or author is None or replied.from_user is None \
                or replied.from_user.id != bot_id:
            return False
        prompt = await self.adapter.state.get(prompt_key(message.chat.id, replied.message_id))
        if prompt is None or prompt.get("user") != str(author.id):
            return False  # someone else's reply to the prompt is an ordinary message
        if is_edit:
            return True  # the answer was given as first sent; an edit changes nothing
        try:
            await self._answer_in_own_words(message, author, prompt)
        except Exception as exc:
            self._failed("an answer in own words", exc)
            await self._say(message, FAILED)
        return True

    async def _answer_in_own_words(self, message: Message, author: User,
                                   prompt: dict[str, Any]) -> None:
        chat_id = str(message.chat.id)
        thread = thread_of(message)
        text = message.text if message.text is not None else (message.caption or "")
        reply = await self._tap(chat_id, author, str(prompt.get("data") or ""), thread=thread,
                                tap_id=str(message.message_id), text=text)
        if reply is None:
            await self._say(message, NO_TAPS)
        elif reply.wants_own_words and reply.card is not None:  # it had no text: ask again
            await self._prompt(message.chat.id, message.message_id, thread, author,
                               reply.card, str(prompt.get("data") or ""))
        elif not reply.accepted:  # already answered, expired, not theirs: say why
            await self._say(message, reply.text)
        # Accepted: the core redraws the card, which says who answered; nothing more to post.

    async def _say(self, message: Message, text: str) -> None:
        """A short reply to the person's message (there is no private answer to a message)."""
        try:
            await self._bot().send_message(
                message.chat.id, escaped(text), parse_mode=ParseMode.HTML,
                message_thread_id=int(thread) if (thread := thread_of(message)) else None,
                reply_parameters=ReplyParameters(message.message_id,
                                                 allow_sending_without_reply=True),
            )
        except TelegramError as exc:
            log.info("telegram:%s could not reply to an answer: %s", self.adapter.account,
                     redact(str(exc)))

    # -- helpers -------------------------------------------------------------------------

    async def _tap(self, chat_id: str, user: User, data: str, *, thread: str | None,
                   tap_id: str, text: str | None = None) -> TapReply | None:
        """Hand the tap to the core; None when the relay takes no taps."""
        sink = self.adapter.taps
        if sink is None:
            return None
        sender = Sender(id=str(user.id), name=display_name(user), is_bot=user.is_bot)
        return await sink(Tap(
            channel_type=CHANNEL_TYPE, account=self.adapter.account, chat_id=chat_id,
            sender=sender, data=data, thread_id=thread, text=text, tap_id=tap_id,
        ))

    def _bound(self, chat_id: str) -> bool:
        return any(binding.chat == chat_id for binding in self.adapter.bindings)

    def _failed(self, what: str, exc: BaseException) -> None:
        """One line per failure; the traceback only the first time (a fault that repeats
        on every press would otherwise flood the log), and never for a Bot API error (its
        traceback may hold the request URL, which holds the token)."""
        self._failures += 1
        traced = self._failures == 1 and not isinstance(exc, TelegramError)
        log.error("telegram:%s could not handle %s: %s", self.adapter.account, what,
                  redact(f"{type(exc).__name__}: {exc}"), exc_info=exc if traced else None)


def prompt_key(chat_id: int | str, message_id: int | str) -> str:
    """The `AccountState` key of an own-words prompt: who may answer through it, and the
    button data their answer goes to the core with."""
    return f"own-words:{chat_id}:{message_id}"
