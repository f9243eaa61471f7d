"""A fake Telegram Bot API server for driving the real python-telegram-bot in tests.

It speaks the Bot API over HTTP on 127.0.0.1: `POST /bot<token>/<method>` with PTB's
form-encoded (JSON-valued) fields, answers `{"ok": …}` like Telegram, records every call,
serves `getUpdates` the way Telegram does (updates stay until a later offset confirms them;
long polls wake on new updates and on shutdown), registers webhooks and POSTs updates to
them, and injects faults: 429 with `retry_after`, any Bot API error, dropped connections,
and HTML Telegram cannot parse. Several tokens (main bot and puppets) have their own
identity, and sent messages are stored per chat so edits behave like Telegram's.

Inline keyboards are checked as Telegram checks them (`callback_data` 1–64 bytes) and kept
on the message; an edit without `reply_markup` drops them, as Telegram's does. A press is a
`callback_query` update (`callback_query` / `push_callback`) delivered to the bot that posted
the message, and must be answered once with `answerCallbackQuery` (text at most 200). As
Telegram's, updates of a kind the bot left out of its `allowed_updates` never reach it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any, TypeVar

import aiohttp
from aiohttp import web

from tests.fakes.flood import flood_wait
from tests.fakes.local_server import serve_locally

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"

T = TypeVar("T")

HTML_TAGS = frozenset(
    {
        "b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler",
        "a", "tg-emoji", "code", "pre", "blockquote",
    }
)  # fmt: skip
"""The tags Telegram's HTML parse mode accepts; anything else is a parse error."""

_TEXT_FIELDS = frozenset({"text", "parse_mode", "url", "secret_token", "action", "caption"})
"""Fields PTB sends as raw strings; every other field is JSON-encoded."""

_ids = itertools.count(1_000_000)

_MARKUPS = frozenset({"inline_keyboard", "keyboard", "remove_keyboard", "force_reply"})
"""What a `reply_markup` must be one of (an empty object is none of them)."""


def user(
    first_name: str,
    *,
    user_id: int | None = None,
    last_name: str | None = None,
    username: str | None = None,
    is_bot: bool = False,
) -> dict[str, Any]:
    """A Bot API `User`."""
    found: dict[str, Any] = {
        "id": user_id if user_id is not None else next(_ids),
        "is_bot": is_bot,
        "first_name": first_name,
    }
    if last_name:
        found["last_name"] = last_name
    if username:
        found["username"] = username
    return found


@dataclass
class BotAccount:
    """One bot token's identity, as `getMe` reports it."""

    token: str
    id: int
    username: str
    first_name: str
    can_read_all_group_messages: bool = True

    def as_user(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "is_bot": True,
            "first_name": self.first_name,
            "username": self.username,
        }


@dataclass
class Call:
    """One Bot API request as the fake understood it."""

    token: str
    method: str
    params: dict[str, Any]


@dataclass
class Fault:
    method: str
    status: int
    description: str
    parameters: dict[str, Any] | None = None
    drop: bool = False
    token: str | None = None


@dataclass
class Webhook:
    url: str
    secret_token: str | None


@dataclass
class _Inbox:
    """One bot's pending updates: kept until a later offset confirms them."""

    updates: list[dict[str, Any]] = field(default_factory=list)
    next_id: int = 1
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    polling: asyncio.Event | None = None
    """Set to end the long poll in progress: a newer getUpdates terminated it (409)."""


class HtmlCheck(HTMLParser):
    """Telegram's HTML rules, enough to refuse what Telegram refuses: unknown and unbalanced
    tags. The error text mimics Telegram's."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.error: str | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in HTML_TAGS:
            self.error = self.error or f'Unsupported start tag "{tag}"'
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.error = self.error or f'Unexpected end tag "{tag}"'
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def check(self, html_text: str) -> tuple[str, str | None]:
        """(visible text, error or None)."""
        self.feed(html_text)
        self.close()
        if self.stack and self.error is None:
            self.error = f'Can\'t find end tag corresponding to start tag "{self.stack[-1]}"'
        return "".join(self.text), self.error


FLOOD_METHODS = frozenset({"sendMessage", "editMessageText", "sendPhoto", "sendDocument"})
"""What Telegram's flood control counts in `FakeTelegram.group_limit`."""
UNPACED = {name: {"count": 100_000, "seconds": 1} for name in ("group", "chat", "bot")}
"""`send_limits` for a bridge against this fake in a test about something other than pacing:
the fake enforces no flood limit unless `group_limit` is set, and the Bot API's real limits
(20 a minute in a group) would stretch a burst test to minutes. The pacing tests use the
defaults' shape with the fake's `group_limit` on."""


class FakeTelegram:
    """The fake Bot API server. `await start()` returns its root URL (`api_base_url`)."""

    def __init__(self) -> None:
        self.bots: dict[str, BotAccount] = {}
        self.calls: list[Call] = []
        self.chats: dict[int, dict[str, Any]] = {}
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}
        self.message_owner: dict[tuple[int, int], str] = {}
        self.versions: dict[tuple[int, int], list[str]] = {}
        """(chat, message id) -> every text a bot-posted message showed, oldest first (its
        edits as people saw them: a refused edit adds nothing)."""
        self.webhooks: dict[str, Webhook] = {}
        self.commands: dict[str, list[dict[str, Any]]] = {}
        self.files: dict[str, bytes] = {}
        self.forbidden: dict[tuple[str, int], str] = {}
        self.faults: list[Fault] = []
        self.outages: dict[str, Fault] = {}
        self.odd_answers: dict[str, Any] = {}
        """method -> the raw JSON body it answers instead (see `answer_oddly`)."""
        self.reject_html = False
        """Answer every HTML message with "can't parse entities", whatever its tags."""
        self.conflicts = 0
        self.group_limit: tuple[int, float] | None = None
        """Flood control in groups as Telegram applies it: (count, seconds) per bot and
        group; None (the default) enforces none."""
        self.flood_refusals = 0
        """429s the flood control answered."""
        self._group_sends: dict[tuple[str, str], deque[float]] = {}
        """getUpdates calls of a live poller ended with 409 because another one started."""
        self.holding = 0
        """Calls held right now (see `hold`)."""
        self.held: dict[str, int] = {}
        """method -> how many more calls go through before the next ones are held."""
        self.allowed_updates: dict[str, list[str]] = {}
        """token -> the update kinds its bot last asked for (getUpdates, setWebhook)."""
        self.callback_answers: dict[str, dict[str, Any]] = {}
        """callback query id -> the answerCallbackQuery call's parameters."""
        self._callbacks: dict[str, str] = {}
        """callback query id -> the token of the bot it was delivered to."""
        self._release = asyncio.Event()
        self._inboxes: dict[str, _Inbox] = defaultdict(_Inbox)
        self._message_ids: dict[int, itertools.count[int]] = {}
        self._closing = False
        self._called = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.url = ""
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._api)
        app.router.add_get("/file/bot{token}/{path:.*}", self._file)
        self.app = app

    # -- setup ---------------------------------------------------------------------------

    def add_bot(
        self, token: str, username: str, *, can_read_all_group_messages: bool = True
    ) -> BotAccount:
        bot_id = int(token.partition(":")[0])
        account = BotAccount(token, bot_id, username, username, can_read_all_group_messages)
        self.bots[token] = account
        return account

    def add_chat(
        self,
        chat_id: int,
        *,
        kind: str | None = None,
        title: str | None = None,
        forum: bool = False,
    ) -> dict[str, Any]:
        kind = kind or ("supergroup" if chat_id < 0 else "private")
        chat: dict[str, Any] = {"id": chat_id, "type": kind}
        if kind == "private":
            chat["first_name"] = title or "Someone"
        else:
            chat["title"] = title or f"Group {chat_id}"
        if forum:
            chat["is_forum"] = True
        self.chats[chat_id] = chat
        return chat

    def add_file(self, file_id: str, content: bytes) -> None:
        self.files[file_id] = content

    def kick(self, token: str, chat_id: int, description: str) -> None:
        """From now on this bot gets 403 `description` for this chat."""
        self.forbidden[(token, chat_id)] = description

    def fail_next(
        self,
        method: str,
        *,
        status: int = 400,
        description: str = "Bad Request",
        retry_after: int | None = None,
        token: str | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next `times` calls of `method` with this Bot API error."""
        parameters = {"retry_after": retry_after} if retry_after is not None else None
        for _ in range(times):
            self.faults.append(Fault(method, status, description, parameters, token=token))

    def answer_oddly(self, method: str, body: Any) -> None:
        """From now on answer `method` (for a known token) with this raw JSON body — what a
        proxy in between, or a Bot API that changed, might say."""
        self.odd_answers[method] = body

    def fail_always(self, method: str, *, status: int = 502, description: str = "Bad Gateway"
                    ) -> None:  # fmt: skip
        """An outage of `method` that lasts until `recover(method)`."""
        self.outages[method] = Fault(method, status, description)

    def recover(self, method: str) -> None:
        self.outages.pop(method, None)

    def drop_next(self, method: str, *, times: int = 1) -> None:
        """Close the connection instead of answering the next `times` calls of `method`."""
        for _ in range(times):
            self.faults.append(Fault(method, 0, "", drop=True))

    def hold(self, method: str, *, after: int = 0) -> None:
        """Let `after` more calls of `method` through, then hold the next ones unanswered
        and not applied (a request still in flight) until `release()`."""
        self.held[method] = after
        self._release.clear()

    def release(self) -> None:
        """Held calls fail (nobody applied them); later calls go through again."""
        self.held.clear()
        self._release.set()

    async def start(self) -> str:
        self._runner, self.url = await serve_locally(self.app)
        return self.url

    async def stop(self) -> None:
        self._closing = True
        self._release.set()
        for inbox in self._inboxes.values():
            inbox.arrived.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- updates -------------------------------------------------------------------------

    def push_update(self, token: str, update: dict[str, Any]) -> dict[str, Any]:
        """Queue an update for `token`'s bot (getUpdates) and return it with its update_id."""
        inbox = self._inboxes[token]
        update = {"update_id": inbox.next_id, **update}
        inbox.next_id += 1
        inbox.updates.append(update)
        inbox.arrived.set()
        return update

    def message(
        self,
        chat_id: int,
        sender: dict[str, Any],
        text: str | None = None,
        *,
        entities: list[dict[str, Any]] | None = None,
        reply_to: int | None = None,
        thread_id: int | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """A Bot API `Message` in a known chat, numbered like the chat's other messages."""
        chat = self.chats.get(chat_id) or self.add_chat(chat_id)
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat_id),
            "date": int(time.time()),
            "chat": chat,
            "from": sender,
            **extra,
        }
        if text is not None:
            message["text"] = text
        if entities:
            message["entities"] = entities
        if thread_id is not None:
            message["message_thread_id"] = thread_id
            if chat.get("is_forum"):
                message["is_topic_message"] = True
        if reply_to is not None:
            replied = self.messages.get((chat_id, reply_to)) or {
                "message_id": reply_to,
                "date": int(time.time()),
                "chat": chat,
            }
            message["reply_to_message"] = replied
        self.messages[(chat_id, message["message_id"])] = message
        return message

    def push_message(self, token: str, chat_id: int, sender: dict[str, Any], text: str | None,
                     **kwargs: Any) -> dict[str, Any]:  # fmt: skip
        """Someone posts in a chat; `token`'s bot gets the update. Returns the message."""
        message = self.message(chat_id, sender, text, **kwargs)
        self.push_update(token, {"message": message})
        return message

    def push_edit(self, token: str, message: dict[str, Any], text: str) -> dict[str, Any]:
        edited = {**message, "text": text, "edit_date": int(time.time())}
        self.messages[(message["chat"]["id"], message["message_id"])] = edited
        self.push_update(token, {"edited_message": edited})
        return edited

    async def deliver_webhook(
        self, token: str, update: dict[str, Any], *, secret: str | None = "",
        url: str | None = None,
    ) -> int:
        """POST an update to `token`'s registered webhook, like Telegram; return the status.

        `secret=""` sends the registered secret, `None` sends no header, else that value.
        `url` is where the registered URL's load balancer sends it (one of several bridge
        instances), when not the URL itself.
        """
        hook = self.webhooks[token]
        inbox = self._inboxes[token]
        if "update_id" not in update:
            update = {"update_id": inbox.next_id, **update}
            inbox.next_id += 1
        if not self.wanted(token, update):
            return 0  # Telegram never sends it
        headers = {}
        sent_secret = hook.secret_token if secret == "" else secret
        if sent_secret is not None:
            headers[SECRET_HEADER] = sent_secret
        async with (
            aiohttp.ClientSession() as session,
            session.post(url or hook.url, json=update, headers=headers) as response,
        ):
            return response.status

    def callback_query(
        self,
        chat_id: int,
        message_id: int,
        sender: dict[str, Any],
        data: str | None,
        *,
        game: bool = False,
    ) -> tuple[str, dict[str, Any]]:
        """A press on a button of a bot's message: (the bot's token, the update body).

        As Telegram does, the query goes to the bot that posted the message and carries the
        message as it is now; `data=None` with `game=True` is a game's query (no data).
        """
        key = (chat_id, message_id)
        token = self.message_owner[key]
        query_id = str(next(_ids))
        query: dict[str, Any] = {
            "id": query_id,
            "from": sender,
            "message": self.messages[key],
            "chat_instance": f"ci{chat_id}",
        }
        if data is not None:
            query["data"] = data
        if game:
            query["game_short_name"] = "game"
        self._callbacks[query_id] = token
        return token, {"callback_query": query}

    def push_callback(self, chat_id: int, message_id: int, sender: dict[str, Any],
                      data: str | None, **kwargs: Any) -> str:  # fmt: skip
        """Someone presses a button; its bot gets the update (getUpdates). Returns the
        query's id."""
        token, update = self.callback_query(chat_id, message_id, sender, data, **kwargs)
        self.push_update(token, update)
        return str(update["callback_query"]["id"])

    async def wait_for_answer(self, query_id: str, timeout: float = 10.0) -> dict[str, Any]:
        """The parameters of the answerCallbackQuery for `query_id`, once it came."""
        return await self.wait_until(lambda: self.callback_answers.get(query_id), timeout)

    def unanswered(self) -> list[str]:
        """Callback queries delivered and never answered (Telegram's spinner keeps going)."""
        return [query for query in self._callbacks if query not in self.callback_answers]

    def keyboard(self, chat_id: int, message_id: int) -> list[list[dict[str, Any]]]:
        """The inline keyboard a message shows now ([] for none)."""
        markup = self.messages[(chat_id, message_id)].get("reply_markup") or {}
        return list(markup.get("inline_keyboard") or [])

    def wanted(self, token: str, update: dict[str, Any]) -> bool:
        """Would Telegram deliver `update` to this bot, given its `allowed_updates`?"""
        allowed = self.allowed_updates.get(token)
        return not allowed or any(kind in update for kind in allowed)

    # -- inspection ----------------------------------------------------------------------

    def calls_to(self, method: str, token: str | None = None) -> list[Call]:
        return [
            call
            for call in self.calls
            if call.method == method and (token is None or call.token == token)
        ]

    async def wait_for_call(self, method: str, count: int = 1, timeout: float = 5.0) -> list[Call]:
        async def enough() -> list[Call]:
            while len(self.calls_to(method)) < count:
                self._called.clear()
                await self._called.wait()
            return self.calls_to(method)

        return await asyncio.wait_for(enough(), timeout)

    async def wait_until(self, predicate: Callable[[], T | None], timeout: float = 10.0) -> T:
        """Re-check `predicate` after every Bot API call until it returns something truthy."""
        async with asyncio.timeout(timeout):
            while not (found := predicate()):
                self._called.clear()
                await self._called.wait()
        return found

    def bot_texts(self, chat_id: int) -> list[str]:
        """What the chat shows of bot-posted messages now (edits applied), oldest first."""
        return [
            message.get("text", "")
            for (chat, _), message in sorted(self.messages.items())
            if chat == chat_id and message.get("from", {}).get("is_bot")
            and (chat, message["message_id"]) in self.message_owner
        ]

    def confirmed(self, token: str) -> bool:
        """Has the bot confirmed (by a later offset) every update pushed to it?"""
        return not self._inboxes[token].updates

    # -- the Bot API -----------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.StreamResponse:
        token = request.match_info["token"]
        method = request.match_info["method"]
        params = await _decode(request)
        self.calls.append(Call(token, method, params))
        self._called.set()
        if method in self.held:
            if self.held[method] > 0:
                self.held[method] -= 1
            else:
                self.holding += 1
                self._called.set()
                await self._release.wait()
                self.holding -= 1
                return _error(502, "Bad Gateway: held and never applied")
        fault = self._take_fault(method, token)
        if fault is not None:
            if fault.drop:
                assert request.transport is not None
                request.transport.close()
                return web.Response()
            return _error(fault.status, fault.description, fault.parameters)
        bot = self.bots.get(token)
        if bot is None:
            return _error(401, "Unauthorized")
        flooded = self._flood_wait(token, method, params)
        if flooded is not None:
            self.flood_refusals += 1
            return _error(429, f"Too Many Requests: retry after {flooded}",
                          {"retry_after": flooded})
        if method in self.odd_answers:
            return web.json_response(self.odd_answers[method])
        handler = getattr(self, f"_m_{method}", None)
        if handler is None:
            return _error(404, "Not Found")
        response = await handler(bot, params)
        alive = request.transport is not None and not request.transport.is_closing()
        if method == "getUpdates" and response.status == 409 and alive:
            self.conflicts += 1  # a poller that is still there was cut off by another one
        return response

    def _flood_wait(self, token: str, method: str, params: dict[str, Any]) -> int | None:
        """Telegram's flood control in a group, when `group_limit` is set: past `count`
        sends (posts and edits) of one bot into one group in any `seconds`, a 429 with the
        whole seconds until a place frees; None when the call may go through (counted)."""
        if self.group_limit is None or method not in FLOOD_METHODS:
            return None
        chat_id = str(params.get("chat_id", ""))
        if not chat_id.startswith("-"):
            return None
        return flood_wait(self._group_sends.setdefault((token, chat_id), deque()),
                          *self.group_limit)

    def _take_fault(self, method: str, token: str) -> Fault | None:
        if method in self.outages:
            return self.outages[method]
        for index, fault in enumerate(self.faults):
            if fault.method == method and fault.token in (None, token):
                return self.faults.pop(index)
        return None

    async def _m_getMe(self, bot: BotAccount, params: dict[str, Any]) -> web.Response:
        return _ok(
            {
                **bot.as_user(),
                "can_join_groups": True,
                "can_read_all_group_messages": bot.can_read_all_group_messages,
                "supports_inline_queries": False,
            }
        )

    async def _m_getUpdates(self, bot: BotAccount, params: dict[str, Any]) -> web.Response:
        inbox = self._inboxes[bot.token]
        if inbox.polling is not None:
            # As Telegram does: a second getUpdates ends the one in progress with a 409.
            inbox.polling.set()
        terminated = inbox.polling = asyncio.Event()
        if params.get("allowed_updates"):
            self.allowed_updates[bot.token] = list(params["allowed_updates"])
        try:
            offset = int(params.get("offset") or 0)
            if offset:
                inbox.updates = [u for u in inbox.updates if u["update_id"] >= offset]
            timeout = float(params.get("timeout") or 0)
            if not inbox.updates and timeout > 0 and not self._closing:
                inbox.arrived.clear()
                arrived = asyncio.ensure_future(inbox.arrived.wait())
                ended = asyncio.ensure_future(terminated.wait())
                await asyncio.wait({arrived, ended}, timeout=timeout,
                                   return_when=asyncio.FIRST_COMPLETED)
                arrived.cancel()
                ended.cancel()
            if terminated.is_set():
                return _error(409, "Conflict: terminated by other getUpdates request; make "
                              "sure that only one bot instance is running")
            inbox.updates = [u for u in inbox.updates if self.wanted(bot.token, u)]
            limit = int(params.get("limit") or 100)
            return _ok(inbox.updates[:limit])
        finally:
            if inbox.polling is terminated:
                inbox.polling = None

    async def _m_deleteWebhook(self, bot: BotAccount, params: dict[str, Any]) -> web.Response:
        self.webhooks.pop(bot.token, None)
        if params.get("drop_pending_updates"):
            self._inboxes[bot.token].updates.clear()
        return _ok(True)

    async def _m_setWebhook(self, bot: BotAccount, params: dict[str, Any]) -> web.Response:
        self.webhooks[bot.token] = Webhook(params["url"], params.get("secret_token"))
        if params.get("allowed_updates"):
            self.allowed_updates[bot.token] = list(params["allowed_updates"])
        return _ok(True)

    async def _m_getWebhookInfo(self, bot: BotAccount, params: dict[str, Any]) -> web.Response:
        hook = self.webhooks.get(bot.token)
        return _ok({"url": hook.url if hook else "", "has_custom_certificate": False,
                    "pending_update_count": len(self._inboxes[bot.token].updates)})  # fmt: skip

    async def _m_setMyCommands(self, bot: BotAccount, params: dict[str, Any]) -> web.Response:
        self.commands[bot.token] = list(params.get("commands") or [])
        return _ok(True)

    async def _m_sendChatAction(self, bot: BotAccount, params: dict[str, Any]) -> web.Response:
        chat_id = int(params["chat_id"])
        if (problem := self._cannot_post(bot, chat_id)) is not None:
            return problem
        return _ok(True)

    async def _m_sendMessage(self, bot: BotAccount, params: dict[str, Any]) -> web.Response:
        chat_id = int(params["chat_id"])
        if (problem := self._cannot_post(bot, chat_id)) is not None:
            return problem
        text, problem = self._visible(params)
        if problem is not None:
            return problem
        if not text.strip():
            return _error(400, "Bad Request: message text is empty")
        if len(text.encode("utf-16-le")) // 2 > 4096:
            return _error(400, "Bad Request: message is too long")
        markup, problem = _inline_keyboard(params.get("reply_markup"))
        if problem is not None:
            return problem
        extra: dict[str, Any] = {}
        if markup:
            extra["reply_markup"] = markup
        reply = params.get("reply_parameters") or {}
        if reply.get("message_id"):
            extra["reply_to"] = int(reply["message_id"])
        if params.get("message_thread_id"):
            extra["thread_id"] = int(params["message_thread_id"])
        message = self.message(chat_id, bot.as_user(), text, **extra)
        self.message_owner[(chat_id, message["message_id"])] = bot.token
        self.versions[(chat_id, message["message_id"])] = [text]
        return _ok(message)

    async def _m_editMessageText(self, bot: BotAccount, params: dict[str, Any]) -> web.Response:
        chat_id = int(params["chat_id"])
        key = (chat_id, int(params["message_id"]))
        if key not in self.messages:
            return _error(400, "Bad Request: message to edit not found")
        if self.message_owner.get(key) != bot.token:
            return _error(400, "Bad Request: message can't be edited")
        text, problem = self._visible(params)
        if problem is not None:
            return problem
        markup, problem = _inline_keyboard(params.get("reply_markup"))
        if problem is not None:
            return problem
        current = self.messages[key]
        if current.get("text") == text and current.get("reply_markup") == markup:
            return _error(
                400,
                "Bad Request: message is not modified: specified new message content and reply "
                "markup are exactly the same as a current content and reply markup of the message",
            )
        # As Telegram's: an edit without a keyboard (or with an empty one) drops the old one.
        edited = {k: v for k, v in current.items() if k != "reply_markup"}
        edited.update({"text": text, "edit_date": int(time.time())})
        if markup:
            edited["reply_markup"] = markup
        self.messages[key] = edited
        self.versions.setdefault(key, []).append(text)
        return _ok(edited)

    async def _m_answerCallbackQuery(self, bot: BotAccount, params: dict[str, Any]
                                     ) -> web.Response:  # fmt: skip
        query_id = str(params.get("callback_query_id", ""))
        if self._callbacks.get(query_id) != bot.token or query_id in self.callback_answers:
            return _error(400, "Bad Request: query is too old and response timeout expired or "
                          "query ID is invalid")
        if len(str(params.get("text", "")).encode("utf-16-le")) // 2 > 200:
            return _error(400, "Bad Request: MESSAGE_TOO_LONG")
        self.callback_answers[query_id] = params
        return _ok(True)

    async def _m_getFile(self, bot: BotAccount, params: dict[str, Any]) -> web.Response:
        file_id = params["file_id"]
        if file_id not in self.files:
            return _error(400, "Bad Request: invalid file_id")
        size = len(self.files[file_id])
        path = f"files/{file_id}"
        return _ok({"file_id": file_id, "file_unique_id": f"u{file_id}", "file_size": size,
                    "file_path": path})  # fmt: skip

    async def _file(self, request: web.Request) -> web.Response:
        if request.match_info["token"] not in self.bots:
            return web.Response(status=401)
        file_id = request.match_info["path"].removeprefix("files/")
        if file_id not in self.files:
            return web.Response(status=404)
        return web.Response(body=self.files[file_id])

    def _cannot_post(self, bot: BotAccount, chat_id: int) -> web.Response | None:
        if (bot.token, chat_id) in self.forbidden:
            return _error(403, self.forbidden[(bot.token, chat_id)])
        if chat_id not in self.chats:
            return _error(400, "Bad Request: chat not found")
        return None

    def _visible(self, params: dict[str, Any]) -> tuple[str, web.Response | None]:
        text = str(params.get("text", ""))
        if params.get("parse_mode") != "HTML":
            return text, None
        visible, error = HtmlCheck().check(text)
        if self.reject_html:
            error = error or "forced by the test"
        if error is not None:
            return "", _error(400, f"Bad Request: can't parse entities: {error}")
        return visible, None

    def _next_message_id(self, chat_id: int) -> int:
        counter = self._message_ids.setdefault(chat_id, itertools.count(1))
        return next(counter)


async def _decode(request: web.Request) -> dict[str, Any]:
    """PTB posts form fields whose non-string values are JSON; JSON bodies are accepted too."""
    if request.content_type == "application/json":
        body = await request.json() if request.can_read_body else {}
        return dict(body)
    form = await request.post()
    params: dict[str, Any] = dict(request.query)
    for key, value in form.items():
        if not isinstance(value, str) or key in _TEXT_FIELDS:
            params[key] = value
            continue
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params


def _inline_keyboard(markup: Any) -> tuple[dict[str, Any] | None, web.Response | None]:
    """(the inline keyboard to keep on the message, or None; an error as Telegram's).

    Other markups (ForceReply, a reply keyboard) are accepted and not kept: Telegram does not
    show them on the message either.
    """
    if markup is None:
        return None, None
    if not isinstance(markup, dict) or not _MARKUPS & markup.keys():
        return None, _error(400, "Bad Request: can't parse reply keyboard markup JSON object")
    if "inline_keyboard" not in markup:
        return None, None
    rows = markup["inline_keyboard"]
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        return None, _error(400, "Bad Request: can't parse inline keyboard button")
    for row in rows:
        for button in row:
            if not isinstance(button, dict) or not button.get("text"):
                return None, _error(400, "Bad Request: can't parse inline keyboard button")
            data = button.get("callback_data")
            if data is not None and not 1 <= len(str(data).encode()) <= 64:
                return None, _error(400, "Bad Request: BUTTON_DATA_INVALID")
    kept = [row for row in rows if row]
    return ({"inline_keyboard": kept} if kept else None), None


def _ok(result: Any) -> web.Response:
    return web.json_response({"ok": True, "result": result})


def _error(status: int, description: str, parameters: dict[str, Any] | None = None) -> web.Response:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if parameters:
        body["parameters"] = parameters
    return web.json_response(body, status=status)
