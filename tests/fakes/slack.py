"""A fake Slack for driving the real slack-bolt and slack_sdk in tests.

One aiohttp server on 127.0.0.1 plays every part of Slack the bridge talks to:

- the Web API at `/api/<method>` (`auth.test` with the granted scopes in `x-oauth-scopes`,
  `users.info`, `conversations.info`, `chat.postMessage` / `update` / `delete`,
  `apps.connections.open`), checking tokens and answering `{"ok": false, "error": …}` like
  Slack; faults on demand: 429 with `Retry-After`, any error code, HTTP 5xx;
- Socket Mode at `/link/?ticket=…` (one-time tickets from `apps.connections.open`): `hello`,
  `events_api` and `slash_commands` envelopes, the client's acks, redelivery with
  `retry_attempt`, `disconnect` messages and dropped connections;
- the Events API for HTTP mode: events and slash commands POSTed to the bridge with a v0
  signature (`signed_headers`, and `post_signed` for hand-made requests);
- interactivity: Block Kit `blocks` on `chat.postMessage` / `chat.update`, checked against
  Slack's limits (`invalid_blocks`); a press on a button (`press`) and a modal's submission
  (`submit_view`) as `block_actions` / `view_submission` payloads — an `interactive` envelope
  over Socket Mode, or a signed form (`payload=…`) POSTed to the Interactivity Request URL;
  `chat.postEphemeral` and `views.open` (a `trigger_id` the fake issued, used once);
- `response_url`s at `/response/<id>`, which expire and wear out as Slack's do.

The app's own posts, edits and deletes come back as `message` events carrying its bot id,
as Slack sends them — by default alternately before and after the API call answers, since
Slack often echoes a post before `chat.postMessage` has returned. Every call is recorded;
`wait_until` re-checks a condition whenever anything happens.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar
from urllib.parse import urlencode

import aiohttp
from aiohttp import web
from slack_sdk.signature import SignatureVerifier

from tests.fakes.flood import flood_wait

T = TypeVar("T")

BOT_TOKEN = "xoxb-1111-2222-fakeBotTokenValue42"
APP_TOKEN = "xapp-1-A0FAKE-3333-fakeAppTokenValue42"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"

DEFAULT_SCOPES = (
    "chat:write", "chat:write.customize", "channels:history", "groups:history",
    "im:history", "mpim:history", "channels:read", "groups:read", "users:read", "commands",
)  # fmt: skip

EchoOrder = Literal["alternate", "before", "after", "off"]

_counter = itertools.count(1)


def signed_headers(secret: str, body: str, timestamp: int | None = None) -> dict[str, str]:
    """`X-Slack-Request-Timestamp` and `X-Slack-Signature` for `body`, as Slack signs it."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
    assert signature is not None
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature}


async def post_signed(
    url: str,
    body: str,
    *,
    secret: str = SIGNING_SECRET,
    content_type: str = "application/json",
    timestamp: int | None = None,
    headers: Mapping[str, str] | None = None,
    session: aiohttp.ClientSession | None = None,
) -> tuple[int, str]:
    """POST `body` signed with `secret` (or with the given `headers` instead); (status, text)."""
    sent = {"Content-Type": content_type, **signed_headers(secret, body, timestamp)}
    sent.update(headers or {})
    own = session is None
    session = session or aiohttp.ClientSession()
    try:
        async with session.post(url, data=body.encode(), headers=sent) as response:
            return response.status, await response.text()
    finally:
        if own:
            await session.close()


@dataclass
class Call:
    """One Web API request as the fake understood it."""

    method: str
    params: dict[str, Any]
    token: str | None


@dataclass
class Fault:
    method: str
    error: str
    status: int = 200
    retry_after: float | None = None
    times: int | None = None
    """How many calls fail; None for every call until `recover`."""


@dataclass
class Delivery:
    """One event or command sent to the bridge (over Socket Mode or HTTP)."""

    kind: str
    payload: dict[str, Any]
    envelope_id: str | None = None
    status: int | None = None
    """HTTP mode: the bridge's answer."""
    text: str = ""
    response: dict[str, Any] | None = None
    """What the bridge acked it with: the Socket Mode ack's `payload`, or the HTTP body as
    JSON (a modal's `response_action`)."""
    acked: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class ResponsePost:
    """A POST the bridge made to a slash command's `response_url`."""

    command_id: str
    body: dict[str, Any]


UNPACED = {"channel": {"count": 100_000, "seconds": 1}}
"""`send_limits` for a bridge against this fake in a test about something other than pacing:
the fake enforces no per-channel limit, and Slack's real one (about a message a second)
would stretch a burst test to minutes."""


class FakeSlack:
    """The fake Slack. `await start()` returns its root; `api_url` is the Web API base."""

    def __init__(
        self,
        *,
        bot_token: str = BOT_TOKEN,
        app_token: str = APP_TOKEN,
        signing_secret: str = SIGNING_SECRET,
        scopes: tuple[str, ...] = DEFAULT_SCOPES,
    ) -> None:
        self.bot_token = bot_token
        self.app_token = app_token
        self.signing_secret = signing_secret
        self.scopes = list(scopes)
        self.team_id, self.team = "T0FAKE", "Fake Team"
        self.bot_user_id, self.bot_id, self.app_id = "UBRIDGE", "BBRIDGE", "A0FAKE"
        self.bot_name = "bcn-bridge"
        self.users: dict[str, dict[str, Any]] = {}
        self.add_user(self.bot_user_id, self.bot_name, is_bot=True)
        self.channels: dict[str, dict[str, Any]] = {}
        self.messages: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.versions: dict[tuple[str, str], list[str | None]] = {}
        """(channel, ts) -> every text a message the app posted showed, oldest first; None
        once it was deleted."""
        self.calls: list[Call] = []
        self.faults: list[Fault] = []
        self.channel_limit: tuple[int, float] | None = None
        """Slack's posting limit per channel as (count, seconds); None enforces none."""
        self.rate_limited = 0
        """429s the channel limit answered."""
        self._channel_sends: dict[str, deque[float]] = {}
        self.odd_answers: dict[str, Any] = {}
        """method -> the raw JSON body it answers instead (see `answer_oddly`)."""
        self.deliveries: list[Delivery] = []
        self.held: set[str] = set()
        """Methods whose calls are held unanswered and not applied (see `hold`)."""
        self.holding = 0
        """Calls held right now."""
        self._release = asyncio.Event()
        self.acks: list[dict[str, Any]] = []
        self.responses: list[ResponsePost] = []
        self.expired_responses = False
        """Every response_url answers 404 `expired_url` (older than 30 minutes)."""
        self.echo: EchoOrder = "alternate"
        self.events_url: str | None = None
        """HTTP mode: the bridge's Request URL; None delivers over Socket Mode."""
        self.interactivity_url: str | None = None
        """HTTP mode: the Interactivity Request URL; None means `…/interactivity` next to a
        `…/events` URL."""
        self.ephemerals: list[dict[str, Any]] = []
        """`chat.postEphemeral` calls Slack took: channel, user, text, thread_ts."""
        self.views: dict[str, dict[str, Any]] = {}
        """view id -> a modal `views.open` opened (with its `id`)."""
        self._triggers: set[str] = set()
        self.connections_opened = 0
        """`apps.connections.open` calls answered (each gives one ticket)."""
        self.sockets_opened = 0
        """Socket Mode connections accepted."""
        self.url = ""
        self._sockets: list[web.WebSocketResponse] = []
        self._tickets: set[str] = set()
        self._envelopes: dict[str, Delivery] = {}
        self._sent_on: dict[int, list[Delivery]] = {}
        self._response_uses: dict[str, int] = defaultdict(int)
        self._echoes = itertools.count()
        self._ts = itertools.count(1)
        self._changed = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closing = False
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/link/", self._link)
        app.router.add_post("/response/{command_id}", self._response_url)
        self.app = app

    # -- setup ---------------------------------------------------------------------------

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    async def start(self) -> str:
        runner = web.AppRunner(self.app, shutdown_timeout=0.5, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runner = runner
        self._session = aiohttp.ClientSession()
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        return self.url

    async def stop(self) -> None:
        self._closing = True
        for socket in list(self._sockets):
            await socket.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def add_user(
        self,
        user_id: str,
        name: str,
        *,
        display_name: str = "",
        real_name: str = "",
        is_bot: bool = False,
    ) -> dict[str, Any]:
        user = {
            "id": user_id, "team_id": self.team_id, "name": name, "real_name": real_name,
            "is_bot": is_bot, "deleted": False,
            "profile": {"display_name": display_name, "real_name": real_name},
        }  # fmt: skip
        self.users[user_id] = user
        return user

    def add_channel(self, channel_id: str, name: str, *, member: bool = True) -> None:
        self.channels[channel_id] = {
            "id": channel_id, "name": name, "is_channel": True, "is_member": member,
        }

    def rate_limit(self, method: str, retry_after: float = 1, times: int | None = 1) -> None:
        self.faults.append(Fault(method, "ratelimited", 429, retry_after, times))

    def fail(self, method: str, error: str, *, status: int = 200, times: int | None = None) -> None:
        self.faults.append(Fault(method, error, status, None, times))

    def answer_oddly(self, method: str, body: Any) -> None:
        """From now on answer `method` (with the right token) with this raw JSON body — what
        a proxy in between, or a Web API that changed, might say."""
        self.odd_answers[method] = body

    def recover(self, method: str) -> None:
        self.faults = [fault for fault in self.faults if fault.method != method]

    def hold(self, method: str) -> None:
        """Hold the next calls of `method` unanswered and not applied (a request still in
        flight) until `release()`."""
        self.held.add(method)
        self._release.clear()

    def release(self) -> None:
        """Held calls fail with `service_unavailable` (nobody applied them, and Slack says to
        try again); later calls go through again."""
        self.held.clear()
        self._release.set()

    # -- what the bridge did ---------------------------------------------------------------

    def calls_to(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method]

    def posts(self, channel: str, thread_ts: str | None = None) -> list[dict[str, Any]]:
        """The app's messages in a channel (or one thread of it) as shown now, oldest first."""
        return [
            message for message in self.messages[channel]
            if message.get("bot_id") == self.bot_id and message.get("thread_ts") == thread_ts
        ]  # fmt: skip

    def texts(self, channel: str, thread_ts: str | None = None) -> list[str]:
        return [message["text"] for message in self.posts(channel, thread_ts)]

    async def wait_until(self, predicate: Callable[[], T | None], timeout: float = 10.0) -> T:
        """Re-check `predicate` after everything the fake sees until it returns something
        truthy."""
        async with asyncio.timeout(timeout):
            while not (found := predicate()):
                self._changed.clear()
                await self._changed.wait()
        return found

    def _notify(self) -> None:
        self._changed.set()

    # -- events ----------------------------------------------------------------------------

    def next_ts(self) -> str:
        return f"1764000000.{next(self._ts):06d}"

    def human_message(
        self,
        channel: str,
        user: str,
        text: str,
        *,
        thread_ts: str | None = None,
        files: list[dict[str, Any]] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """A person's message, kept in the channel (so it can be edited), as its event."""
        message: dict[str, Any] = {"type": "message", "user": user, "text": text,
                                   "ts": self.next_ts(), "team": self.team_id, **extra}
        if thread_ts:
            message["thread_ts"] = thread_ts
        if files:
            message["files"] = files
            message["subtype"] = "file_share"
        self.messages[channel].append(message)
        return {**message, "channel": channel, "event_ts": message["ts"],
                "channel_type": "channel"}

    def other_bot_message(
        self, channel: str, *, bot_id: str, user: str, name: str, text: str
    ) -> dict[str, Any]:
        """A message another app's bot posted (with its own bot id and profile)."""
        return self.human_message(
            channel, user, text, bot_id=bot_id, app_id=f"A{bot_id}",
            bot_profile={"id": bot_id, "name": name, "app_id": f"A{bot_id}"},
        )

    def edit(self, channel: str, ts: str, text: str) -> dict[str, Any]:
        """Someone edits a message: the `message_changed` event Slack sends."""
        message = self._find(channel, ts)
        assert message is not None, f"no message {ts} in {channel}"
        old = dict(message)
        stamp = self.next_ts()
        message.update(text=text, edited={"user": message.get("user"), "ts": stamp})
        return self._changed_event(channel, stamp, message, old)

    def delete(self, channel: str, ts: str) -> dict[str, Any]:
        """Someone deletes a message: the `message_deleted` event Slack sends."""
        message = self._find(channel, ts)
        assert message is not None, f"no message {ts} in {channel}"
        self.messages[channel].remove(message)
        return self._deleted_event(channel, message)

    def callback(self, event: dict[str, Any], event_id: str | None = None) -> dict[str, Any]:
        """The `event_callback` body Slack wraps an event in."""
        return {
            "token": "unused-verification-token", "team_id": self.team_id,
            "api_app_id": self.app_id, "event": event, "type": "event_callback",
            "event_id": event_id or f"Ev{next(_counter):010d}", "event_time": int(time.time()),
            "authorizations": [{"enterprise_id": None, "team_id": self.team_id,
                                "user_id": self.bot_user_id, "is_bot": True,
                                "is_enterprise_install": False}],
            "is_ext_shared_channel": False, "event_context": "4-fake",
        }  # fmt: skip

    async def push(self, event: dict[str, Any], *, event_id: str | None = None) -> Delivery:
        """Send an event to the bridge: over Socket Mode, or POSTed in HTTP mode."""
        return await self.deliver("events_api", self.callback(event, event_id))

    async def redeliver(self, delivery: Delivery, attempt: int = 1) -> Delivery:
        """Send the same event again, as Slack does when it saw no ack within 3 s."""
        return await self.deliver(delivery.kind, delivery.payload, retry_attempt=attempt)

    async def push_command(
        self, command: str, text: str, *, user: str, channel: str
    ) -> Delivery:
        """Someone types a slash command; the payload carries a fresh response_url."""
        number = next(_counter)
        payload = {
            "token": "unused-verification-token", "team_id": self.team_id,
            "team_domain": "fake", "channel_id": channel,
            "channel_name": self.channels.get(channel, {}).get("name", channel),
            "user_id": user, "user_name": self.users.get(user, {}).get("name", user),
            "command": command, "text": text, "api_app_id": self.app_id,
            "is_enterprise_install": "false",
            "response_url": f"{self.url}/response/cmd{number}",
            "trigger_id": f"{number}.{number * 7}.{uuid.uuid4().hex}",
        }  # fmt: skip
        return await self.deliver("slash_commands", payload)

    # -- interactivity ---------------------------------------------------------------------

    def message(self, channel: str, ts: str) -> dict[str, Any]:
        """A message as shown now (blocks included)."""
        message = self._find(channel, ts)
        assert message is not None, f"no message {ts} in {channel}"
        return message

    def buttons(self, channel: str, ts: str) -> list[dict[str, Any]]:
        """The buttons a message shows now, in order (copies: press them later as shown)."""
        return [json.loads(json.dumps(element))
                for block in self.message(channel, ts).get("blocks") or []
                if block.get("type") == "actions"
                for element in block.get("elements", []) if element.get("type") == "button"]

    def _trigger(self) -> str:
        number = next(_counter)
        trigger = f"{number}.{number * 7}.{uuid.uuid4().hex}"
        self._triggers.add(trigger)
        return trigger

    def press_payload(
        self, channel: str, ts: str, user: str, button: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The `block_actions` payload of `user` pressing `button` (as it was shown) on the
        message `ts`; the message in it is the message as shown now."""
        message = self.message(channel, ts)
        person = self.users.get(user, {"id": user, "name": user})
        block_id = next((block.get("block_id") for block in message.get("blocks") or []
                         if block.get("type") == "actions"), "gone")
        container: dict[str, Any] = {"type": "message", "message_ts": ts,
                                     "channel_id": channel, "is_ephemeral": False}
        if message.get("thread_ts"):
            container["thread_ts"] = message["thread_ts"]
        return {
            "type": "block_actions", "token": "unused-verification-token",
            "api_app_id": self.app_id, "team": {"id": self.team_id, "domain": "fake"},
            "user": {"id": user, "username": person.get("name"), "name": person.get("name"),
                     "team_id": self.team_id},
            "container": container, "trigger_id": self._trigger(),
            "channel": {"id": channel, "name": self.channels.get(channel, {}).get("name")},
            "message": json.loads(json.dumps(message)),
            "response_url": f"{self.url}/response/act{next(_counter)}",
            "state": {"values": {}},
            "actions": [{
                "type": "button", "action_id": button.get("action_id"), "block_id": block_id,
                "text": button.get("text"), "value": button.get("value"),
                **({"style": button["style"]} if button.get("style") else {}),
                "action_ts": f"{time.time():.6f}",
            }],
        }  # fmt: skip

    async def press(
        self, channel: str, ts: str, user: str, button: Mapping[str, Any]
    ) -> Delivery:
        """`user` presses `button` (as it was shown) on message `ts`: a `block_actions`
        interaction, sent the way the app receives interactions."""
        return await self.deliver("interactive", self.press_payload(channel, ts, user, button))

    async def submit_view(self, view_id: str, user: str, values: dict[str, dict[str, str]]
                          ) -> Delivery:
        """`user` submits the modal `view_id` with `values` ({block_id: {action_id: text}})."""
        view = self.views[view_id]
        person = self.users.get(user, {"id": user, "name": user})
        state = {block: {action: {"type": "plain_text_input", "value": text}
                         for action, text in fields.items()}
                 for block, fields in values.items()}
        payload = {
            "type": "view_submission", "token": "unused-verification-token",
            "api_app_id": self.app_id, "team": {"id": self.team_id, "domain": "fake"},
            "user": {"id": user, "username": person.get("name"), "name": person.get("name"),
                     "team_id": self.team_id},
            "trigger_id": self._trigger(),
            "view": {**view, "state": {"values": state}, "hash": uuid.uuid4().hex[:16]},
            "response_urls": [],
        }  # fmt: skip
        return await self.deliver("interactive", payload)

    async def deliver(
        self, kind: str, payload: dict[str, Any], *, retry_attempt: int | None = None
    ) -> Delivery:
        delivery = Delivery(kind, payload)
        self.deliveries.append(delivery)
        if self.events_url is not None:
            await self._post_event(delivery, retry_attempt)
        else:
            await self._send_envelope(delivery, retry_attempt)
        self._notify()
        return delivery

    async def acked(self, delivery: Delivery, timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            await delivery.acked.wait()

    # -- Socket Mode -------------------------------------------------------------------------

    @property
    def connected(self) -> int:
        return sum(1 for socket in self._sockets if not socket.closed)

    async def disconnect(self, reason: str = "refresh_requested") -> None:
        """Ask the client to reconnect, as Slack does every few hours."""
        for socket in self._live_sockets():
            await socket.send_json({"type": "disconnect", "reason": reason,
                                    "debug_info": {"host": "fake-slack"}})

    async def drop_connections(self) -> None:
        """Close every Socket Mode connection from the server side, without a word."""
        for socket in self._live_sockets():
            await socket.close(code=1011)

    def _live_sockets(self) -> list[web.WebSocketResponse]:
        return [socket for socket in self._sockets if not socket.closed]

    async def _send_envelope(self, delivery: Delivery, retry_attempt: int | None) -> None:
        await self.wait_until(self._live_sockets)
        envelope_id = str(uuid.uuid4())
        delivery.envelope_id = envelope_id
        self._envelopes[envelope_id] = delivery
        envelope: dict[str, Any] = {
            "envelope_id": envelope_id, "type": delivery.kind, "payload": delivery.payload,
            "accepts_response_payload": delivery.kind != "events_api",
        }
        if retry_attempt is not None:
            envelope.update(retry_attempt=retry_attempt, retry_reason="timeout")
        socket = self._live_sockets()[-1]
        self._sent_on.setdefault(id(socket), []).append(delivery)
        await socket.send_json(envelope)

    async def _link(self, request: web.Request) -> web.StreamResponse:
        ticket = request.query.get("ticket", "")
        if ticket not in self._tickets:
            return web.Response(status=401, text="invalid ticket")
        self._tickets.discard(ticket)  # one connection per ticket, as Slack's are
        socket = web.WebSocketResponse(autoping=True)
        await socket.prepare(request)
        self._sockets.append(socket)
        self.sockets_opened += 1
        await socket.send_json({
            "type": "hello", "num_connections": self.connected,
            "debug_info": {"host": "fake-slack", "approximate_connection_time": 18060},
            "connection_info": {"app_id": self.app_id},
        })
        self._notify()
        async for frame in socket:
            if frame.type != aiohttp.WSMsgType.TEXT:
                continue
            ack = json.loads(frame.data)
            self.acks.append(ack)
            delivery = self._envelopes.get(str(ack.get("envelope_id")))
            if delivery is not None:
                payload = ack.get("payload")
                delivery.response = payload if isinstance(payload, dict) else None
                delivery.acked.set()
            self._notify()
        self._retry_unacked(self._sent_on.pop(id(socket), []))
        self._notify()
        return socket

    def _retry_unacked(self, sent: list[Delivery]) -> None:
        """Envelopes a closed connection never acked go out again, as Slack retries them."""
        for delivery in sent:
            if self._closing or delivery.acked.is_set() or delivery.kind != "events_api":
                continue
            task = asyncio.create_task(self.redeliver(delivery))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    # -- HTTP mode ---------------------------------------------------------------------------

    async def _post_event(self, delivery: Delivery, retry_attempt: int | None) -> None:
        assert self.events_url is not None and self._session is not None
        url = self.events_url
        if delivery.kind == "slash_commands":
            body, content_type = urlencode(delivery.payload), "application/x-www-form-urlencoded"
        elif delivery.kind == "interactive":
            url = self.interactions_url()
            body = urlencode({"payload": json.dumps(delivery.payload)})
            content_type = "application/x-www-form-urlencoded"
        else:
            body, content_type = json.dumps(delivery.payload), "application/json"
        headers = {}
        if retry_attempt is not None:
            headers = {"X-Slack-Retry-Num": str(retry_attempt),
                       "X-Slack-Retry-Reason": "http_timeout"}
        delivery.status, delivery.text = await post_signed(
            url, body, secret=self.signing_secret, content_type=content_type,
            headers=headers, session=self._session,
        )
        if delivery.status == 200:
            try:
                answer = json.loads(delivery.text) if delivery.text else None
            except ValueError:
                answer = None
            delivery.response = answer if isinstance(answer, dict) else None
            delivery.acked.set()

    def interactions_url(self) -> str:
        """HTTP mode: where presses and modal submissions are POSTed."""
        assert self.events_url is not None
        if self.interactivity_url is not None:
            return self.interactivity_url
        return self.events_url.removesuffix("/events") + "/interactivity"

    async def url_verification(self, challenge: str = "3eZbrw1aBm2rZgRNFdxV") -> tuple[int, str]:
        """The challenge Slack sends when someone saves the Request URL."""
        assert self.events_url is not None
        body = json.dumps({"token": "unused", "challenge": challenge, "type": "url_verification"})
        return await post_signed(self.events_url, body, secret=self.signing_secret,
                                 session=self._session)

    # -- response_url ------------------------------------------------------------------------

    async def _response_url(self, request: web.Request) -> web.Response:
        command_id = request.match_info["command_id"]
        self._response_uses[command_id] += 1
        self._notify()
        if self.expired_responses:
            return web.Response(status=404, text="expired_url")
        if self._response_uses[command_id] > 5:
            return web.Response(status=404, text="used_url")
        self.responses.append(ResponsePost(command_id, await request.json()))
        self._notify()
        return web.Response(text="ok")

    # -- the Web API -------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        if request.body_exists:
            if request.content_type == "application/json":
                params.update(await request.json())
            else:
                params.update(dict(await request.post()))
        authorization = request.headers.get("Authorization", "")
        token = authorization.removeprefix("Bearer ") if authorization else params.get("token")
        self.calls.append(Call(method, params, token))
        self._notify()
        if method in self.held:
            self.holding += 1
            self._notify()
            try:
                await self._release.wait()
            finally:
                self.holding -= 1
            return web.json_response({"ok": False, "error": "service_unavailable"}, status=503)
        flooded = self._channel_wait(method, params)
        if flooded is not None:
            self.rate_limited += 1
            return web.json_response({"ok": False, "error": "ratelimited"}, status=429,
                                     headers={"Retry-After": str(flooded)})
        fault = self._fault_for(method)
        if fault is not None:
            headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after else {}
            return web.json_response({"ok": False, "error": fault.error}, status=fault.status,
                                     headers=headers)
        expected = self.app_token if method == "apps.connections.open" else self.bot_token
        if token != expected:
            return web.json_response({"ok": False, "error": "invalid_auth"})
        if method in self.odd_answers:
            return web.json_response(self.odd_answers[method])
        handler = _METHODS.get(method)
        if handler is None:
            return web.json_response({"ok": False, "error": "unknown_method"})
        result = await handler(self, params)
        headers = {"x-oauth-scopes": ",".join(self.scopes)} if method == "auth.test" else {}
        return web.json_response(result, headers=headers)

    def _channel_wait(self, method: str, params: dict[str, Any]) -> int | None:
        """Slack's limit on posting into one channel, when `channel_limit` is set: past
        `count` posts and edits in any `seconds`, a 429 with the whole seconds to wait."""
        if self.channel_limit is None or method not in ("chat.postMessage", "chat.update"):
            return None
        sent = self._channel_sends.setdefault(str(params.get("channel", "")), deque())
        return flood_wait(sent, *self.channel_limit)

    def _fault_for(self, method: str) -> Fault | None:
        for fault in self.faults:
            if fault.method == method:
                if fault.times is not None:
                    fault.times -= 1
                    if fault.times <= 0:
                        self.faults.remove(fault)
                return fault
        return None

    async def _auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True, "url": "https://fake.slack.com/", "team": self.team,
            "user": self.bot_name, "team_id": self.team_id, "user_id": self.bot_user_id,
            "bot_id": self.bot_id, "is_enterprise_install": False,
        }  # fmt: skip

    async def _users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user = self.users.get(str(params.get("user")))
        return {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}

    async def _conversations_info(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self.channels.get(str(params.get("channel")))
        if channel is None:
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "channel": channel}

    async def _connections_open(self, params: dict[str, Any]) -> dict[str, Any]:
        ticket = uuid.uuid4().hex
        self._tickets.add(ticket)
        self.connections_opened += 1
        port = self.url.rsplit(":", 1)[1]
        return {"ok": True, "url": f"ws://127.0.0.1:{port}/link/?ticket={ticket}&app_id="
                                   f"{self.app_id}"}

    def _channel_problem(self, channel: str) -> str | None:
        if channel not in self.channels:
            return "channel_not_found"
        if not self.channels[channel]["is_member"]:
            return "not_in_channel"
        return None

    async def _post_message(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, text = str(params.get("channel") or ""), params.get("text")
        if problem := self._channel_problem(channel):
            return {"ok": False, "error": problem}
        if not text:
            return {"ok": False, "error": "no_text"}
        if len(text) > 40000:
            return {"ok": False, "error": "msg_too_long"}
        if "blocks" in params and (problem := blocks_problem(params["blocks"])):
            return {"ok": False, "error": "invalid_blocks", "errors": [problem]}
        customized = any(params.get(key) for key in ("username", "icon_url", "icon_emoji"))
        if customized and "chat:write.customize" not in self.scopes:
            return {"ok": False, "error": "missing_scope", "needed": "chat:write.customize"}
        message: dict[str, Any] = {"type": "message", "text": text, "ts": self.next_ts(),
                                   "bot_id": self.bot_id, "app_id": self.app_id,
                                   "team": self.team_id}
        if params.get("username"):
            # Posts under a custom name are bot messages without the app's user id.
            message.update(subtype="bot_message", username=params["username"])
            icons = {k: params[k] for k in ("icon_url", "icon_emoji") if params.get(k)}
            if icons:
                message["icons"] = icons
        else:
            message["user"] = self.bot_user_id
            message["bot_profile"] = {"id": self.bot_id, "name": self.bot_name,
                                      "app_id": self.app_id}
        if params.get("thread_ts"):
            message["thread_ts"] = str(params["thread_ts"])
        if params.get("blocks"):
            message["blocks"] = params["blocks"]
        self.messages[channel].append(message)
        self.versions[(channel, message["ts"])] = [text]
        event = {**message, "channel": channel, "event_ts": message["ts"],
                 "channel_type": "channel"}
        await self._echo(event)
        return {"ok": True, "channel": channel, "ts": message["ts"], "message": message}

    async def _update(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, ts = str(params.get("channel") or ""), str(params.get("ts") or "")
        message = self._find(channel, ts)
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        if not params.get("text"):
            return {"ok": False, "error": "no_text"}
        if "blocks" in params and (problem := blocks_problem(params["blocks"])):
            return {"ok": False, "error": "invalid_blocks", "errors": [problem]}
        old = dict(message)
        stamp = self.next_ts()
        message.update(text=params["text"], edited={"user": self.bot_user_id, "ts": stamp})
        if "blocks" in params:  # without it, Slack keeps the blocks the message had
            message["blocks"] = params["blocks"]
        self.versions.setdefault((channel, ts), []).append(params["text"])
        await self._echo(self._changed_event(channel, stamp, message, old))
        return {"ok": True, "channel": channel, "ts": ts, "text": params["text"]}

    async def _delete(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, ts = str(params.get("channel") or ""), str(params.get("ts") or "")
        message = self._find(channel, ts)
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        self.messages[channel].remove(message)
        self.versions.setdefault((channel, ts), []).append(None)
        await self._echo(self._deleted_event(channel, message))
        return {"ok": True, "channel": channel, "ts": ts}

    async def _post_ephemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, user = str(params.get("channel") or ""), str(params.get("user") or "")
        if problem := self._channel_problem(channel):
            return {"ok": False, "error": problem}
        if user not in self.users:
            return {"ok": False, "error": "user_not_in_channel"}
        if not params.get("text") and not params.get("blocks"):
            return {"ok": False, "error": "no_text"}
        self.ephemerals.append({"channel": channel, "user": user, "text": params.get("text"),
                                "thread_ts": params.get("thread_ts")})
        return {"ok": True, "message_ts": self.next_ts()}

    async def _views_open(self, params: dict[str, Any]) -> dict[str, Any]:
        trigger, view = str(params.get("trigger_id") or ""), params.get("view")
        if trigger not in self._triggers:
            return {"ok": False, "error": "invalid_trigger_id"}
        self._triggers.discard(trigger)  # a trigger opens one view
        if not isinstance(view, dict) or (problem := view_problem(view)):
            problem = "not a view" if not isinstance(view, dict) else problem
            return {"ok": False, "error": "invalid_arguments", "response_metadata": {
                "messages": [problem]}}
        view_id = f"V{next(_counter):08d}"
        opened = {**view, "id": view_id, "team_id": self.team_id, "app_id": self.app_id,
                  "bot_id": self.bot_id, "state": {"values": {}}}
        self.views[view_id] = opened
        return {"ok": True, "view": opened}

    def _find(self, channel: str, ts: str) -> dict[str, Any] | None:
        return next((m for m in self.messages[channel] if m["ts"] == ts), None)

    def _changed_event(
        self, channel: str, stamp: str, message: dict[str, Any], old: dict[str, Any]
    ) -> dict[str, Any]:
        return {"type": "message", "subtype": "message_changed", "hidden": True,
                "channel": channel, "ts": stamp, "event_ts": stamp,
                "message": dict(message), "previous_message": old}

    def _deleted_event(self, channel: str, message: dict[str, Any]) -> dict[str, Any]:
        stamp = self.next_ts()
        return {"type": "message", "subtype": "message_deleted", "hidden": True,
                "channel": channel, "ts": stamp, "event_ts": stamp,
                "deleted_ts": message["ts"], "previous_message": dict(message)}

    async def _echo(self, event: dict[str, Any]) -> None:
        """Send the app its own message back, before or after the call answers."""
        order = self.echo
        if order == "off" or (self.events_url is None and not self._live_sockets()):
            return
        if order == "alternate":
            order = "before" if next(self._echoes) % 2 == 0 else "after"
        if order == "before":
            await self.push(event)
            return

        async def later() -> None:
            await asyncio.sleep(0)
            await self.push(event)

        task = asyncio.create_task(later())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


_METHODS = {
    "auth.test": FakeSlack._auth_test,
    "users.info": FakeSlack._users_info,
    "conversations.info": FakeSlack._conversations_info,
    "apps.connections.open": FakeSlack._connections_open,
    "chat.postMessage": FakeSlack._post_message,
    "chat.update": FakeSlack._update,
    "chat.delete": FakeSlack._delete,
    "chat.postEphemeral": FakeSlack._post_ephemeral,
    "views.open": FakeSlack._views_open,
}

BLOCK_TYPES = frozenset({"section", "context", "actions", "divider", "header", "image",
                         "input", "rich_text"})


def blocks_problem(blocks: Any, *, limit: int = 50) -> str | None:
    """What Slack would refuse in a message's (or a modal's) blocks, or None: the limits
    the bridge must keep (block count, section text 3,000, actions elements 25, button text
    75, value 2,000, action and block ids unique and at most 255)."""
    if not isinstance(blocks, list) or len(blocks) > limit:
        return f"blocks must be a list of at most {limit}"
    action_ids: set[str] = set()
    block_ids: set[str] = set()
    for n, block in enumerate(blocks):
        where = f"block {n}"
        if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES:
            return f"{where}: unknown type"
        if "block_id" in block:
            block_id = block["block_id"]
            if not isinstance(block_id, str) or len(block_id) > 255 or block_id in block_ids:
                return f"{where}: bad or repeated block_id"
            block_ids.add(block_id)
        kind = block["type"]
        if kind == "section" and (problem := text_problem(block.get("text"), 3000)):
            return f"{where}: {problem}"
        if kind == "context":
            elements = block.get("elements")
            if not isinstance(elements, list) or not 1 <= len(elements) <= 10:
                return f"{where}: a context has 1 to 10 elements"
            for element in elements:
                if problem := text_problem(element, 3000):
                    return f"{where}: {problem}"
        if kind == "actions":
            elements = block.get("elements")
            if not isinstance(elements, list) or not 1 <= len(elements) <= 25:
                return f"{where}: an actions block has 1 to 25 elements"
            for element in elements:
                if problem := button_problem(element, action_ids):
                    return f"{where}: {problem}"
        if kind == "input":
            element = block.get("element")
            if not isinstance(element, dict) or not element.get("action_id"):
                return f"{where}: an input needs an element with an action_id"
            if text_problem(block.get("label"), 2000, plain=True):
                return f"{where}: an input needs a plain_text label"
    return None


def text_problem(text: Any, limit: int, *, plain: bool = False) -> str | None:
    kinds = ("plain_text",) if plain else ("plain_text", "mrkdwn")
    if not isinstance(text, dict) or text.get("type") not in kinds:
        return "a text object is needed"
    value = text.get("text")
    if not isinstance(value, str) or not value or len(value) > limit:
        return f"text must be 1 to {limit} characters"
    return None


def button_problem(button: Any, action_ids: set[str]) -> str | None:
    if not isinstance(button, dict) or button.get("type") != "button":
        return "only buttons are modelled"
    action_id = button.get("action_id")
    if not isinstance(action_id, str) or len(action_id) > 255 or action_id in action_ids:
        return "a button needs a unique action_id of at most 255 characters"
    action_ids.add(action_id)
    if problem := text_problem(button.get("text"), 75, plain=True):
        return f"button text: {problem}"
    value = button.get("value")
    if value is not None and (not isinstance(value, str) or len(value) > 2000):
        return "a button value is at most 2,000 characters"
    if button.get("style") not in (None, "primary", "danger"):
        return "a button style is primary or danger"
    confirm = button.get("confirm")
    if confirm is not None:
        for key, limit in (("title", 100), ("text", 300), ("confirm", 30), ("deny", 30)):
            if problem := text_problem(confirm.get(key), limit, plain=key != "text"):
                return f"confirm {key}: {problem}"
    return None


def view_problem(view: dict[str, Any]) -> str | None:
    """What Slack would refuse in a modal: its type, title (24), callback id (255), private
    metadata (3,000), blocks (100), and a submit button when it has inputs."""
    if view.get("type") != "modal":
        return "only modals are modelled"
    if problem := text_problem(view.get("title"), 24, plain=True):
        return f"title: {problem}"
    if len(str(view.get("callback_id") or "")) > 255:
        return "callback_id is at most 255 characters"
    if len(str(view.get("private_metadata") or "")) > 3000:
        return "private_metadata is at most 3,000 characters"
    blocks = view.get("blocks")
    if problem := blocks_problem(blocks, limit=100):
        return problem
    has_input = any(block.get("type") == "input" for block in blocks)
    if has_input and text_problem(view.get("submit"), 24, plain=True):
        return "a modal with inputs needs a submit button"
    return None
