"""A fake Discord for driving the real discord.py in tests: REST, gateway and webhooks.

One aiohttp server on 127.0.0.1 speaks what discord.py speaks to Discord:

- REST under `/api/v10` (`api_base_url`): `users/@me`, `oauth2/applications/@me`, channel
  messages (post, edit, delete, history with `before`/`after`), typing, webhooks (list,
  create, execute with `?wait&thread_id`, edit and delete their messages), guild application
  commands (`PUT`), interaction callbacks and followups. JSON answers carry exactly
  `Content-Type: application/json` (discord.py reads anything else as text).
- Message components, as Discord checks them: action rows of at most 5 buttons, at most 5
  rows, labels of at most 80 characters, `custom_id`s of at most 100, unique per message.
  A webhook post carries interactive components only when its webhook belongs to an
  application (`application_id`: the bot created it); another's webhook gets 400, and its
  components are ignored unless the call says `with_components`.
- The gateway at `/gateway/` (`gateway_url`), in `tests/fakes/discord_gateway.py`: HELLO,
  heartbeat ACK, IDENTIFY → READY (whose `resume_gateway_url` points at `/resume-gateway/`
  of this same server) → GUILD_CREATE, REQUEST_GUILD_MEMBERS → GUILD_MEMBERS_CHUNK, RESUME →
  the missed events → RESUMED, INVALID_SESSION for a session it forgot. Several sessions
  of one token (two bridge instances) each get every event of their shard. Content is blanked
  unless IDENTIFY asked for the message content intent, as Discord does; a privileged intent
  the "developer portal" has off closes the socket with 4014, a wrong token with 4004.
- Events: MESSAGE_CREATE for every post — a webhook's carries `webhook_id`, and is sent
  *before* the REST call that made it returns, as Discord often does — MESSAGE_UPDATE,
  MESSAGE_DELETE, GUILD_ROLE_UPDATE, INTERACTION_CREATE — for slash commands
  (`push_interaction`), button presses on a message's components (`push_component`) and
  submitted modals (`submit_modal`). Every interaction callback is kept on its
  `FakeInteraction` (type, content, flags, a modal's form).
- Faults: 429 with the headers discord.py reads (`Via`, a JSON `retry_after`, the
  `X-RateLimit-*` family), any API error by status and code, stalled and dropped requests,
  dropped gateway connections and close codes.

Every REST call is recorded (`calls`, `calls_to`), every gateway frame the client sent too
(`gateway_frames`), and the server computes whom each post would have pinged under its
`allowed_mentions` (`Posted.pinged`). The server accepts several guilds, channels, forum
channels and threads; shards get the guilds that `(guild_id >> 22) % shard_count` assigns.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from aiohttp import web

from tests.fakes import discord_payloads as p
from tests.fakes.discord_gateway import FakeGateway, Session
from tests.fakes.local_server import serve_locally

T = TypeVar("T")

API = "/api/v10"
BOT_TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GzZ1aB.aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789abcd"
BOT_ID = 123456789012345678
"""The id the token's first part encodes (base64 of "123456789012345678")."""
Handler = Callable[[web.Request, "Call"], Awaitable[web.StreamResponse]]


@dataclass
class Call:
    """One REST request as the fake understood it."""

    method: str
    route: str
    path: str
    query: dict[str, str]
    body: Any
    params: dict[str, str]


@dataclass
class Fault:
    route: str
    status: int = 400
    code: int = 0
    message: str = "Bad Request"
    retry_after: float | None = None
    via: bool = True
    drop: bool = False
    stall: float = 0.0


@dataclass
class Posted:
    """One message the channel shows, as people see it now (edits applied)."""

    id: int
    channel_id: int
    author: str
    content: str
    webhook_id: int | None
    pinged: dict[str, Any]
    ephemeral: bool = False
    edits: int = 0
    components: list[dict[str, Any]] = field(default_factory=list)
    """The message's action rows as shown now (empty once an edit took them away)."""

    def custom_ids(self) -> list[str]:
        return [button["custom_id"] for row in self.components
                for button in row.get("components", []) if "custom_id" in button]


@dataclass
class FakeGuild:
    id: int
    name: str
    roles: dict[int, dict[str, Any]] = field(default_factory=dict)
    channels: dict[int, dict[str, Any]] = field(default_factory=dict)
    threads: dict[int, dict[str, Any]] = field(default_factory=dict)
    members: dict[int, dict[str, Any]] = field(default_factory=dict)
    bot_role: int = 0


@dataclass
class FakeWebhook:
    id: int
    token: str
    channel_id: int
    guild_id: int
    name: str
    creator: dict[str, Any]
    application_id: int | None = None
    """The application that created it (a bot's webhooks); only these can post buttons."""

    def as_json(self, with_token: bool = True) -> dict[str, Any]:
        found = {"id": str(self.id), "type": 1, "channel_id": str(self.channel_id),
                 "guild_id": str(self.guild_id), "name": self.name, "avatar": None,
                 "application_id": str(self.application_id) if self.application_id else None,
                 "user": self.creator}
        if with_token:
            found["token"] = self.token
        return found


@dataclass
class FakeInteraction:
    id: int
    token: str
    channel_id: int
    guild_id: int
    response: int | None = None
    """The callback type it was answered with (4 message, 5 deferred, 6 deferred update,
    7 update, 9 modal), None until then."""
    ephemeral: bool = False
    original: int | None = None
    followups: list[int] = field(default_factory=list)
    expired: bool = False
    kind: int = 2
    """2 slash command, 3 message component, 5 modal submit."""
    user_id: int = 0
    message_id: int | None = None
    """The message whose component was pressed (component interactions)."""
    custom_id: str = ""
    callback: dict[str, Any] | None = None
    """The callback's `data` as the client sent it (content and flags, or a modal's form)."""



class FakeDiscord:
    """The fake server. `await start()`; then `api_url` and `gateway_url` go in the config."""

    def __init__(self, *, token: str = BOT_TOKEN, bot_name: str = "Bridge") -> None:
        self.ids = p.Snowflakes()
        self.token = token
        self.bot = p.user(BOT_ID, bot_name, bot=True)
        self.application = {
            "id": str(BOT_ID), "name": bot_name, "icon": None, "description": "",
            "rpc_origins": [], "bot_public": True, "bot_require_code_grant": False,
            "owner": p.user(self.ids.next(), "owner"), "summary": "", "verify_key": "00" * 32,
            "team": None, "flags": 0, "bot": self.bot,
        }
        self.privileged_enabled: set[str] = {"message_content", "members"}
        """The developer portal's switches: privileged intents this bot may ask for."""
        self.guilds: dict[int, FakeGuild] = {}
        self.messages: dict[int, dict[str, Any]] = {}
        self.posted: dict[int, Posted] = {}
        self.versions: dict[int, list[str | None]] = {}
        """message id -> every content a message posted over REST (as the bot or a webhook)
        showed, oldest first; None once it was deleted."""
        self.webhooks: dict[int, FakeWebhook] = {}
        self.commands: dict[int, list[dict[str, Any]]] = {}
        self.interactions: dict[int, FakeInteraction] = {}
        self.calls: list[Call] = []
        self.faults: list[Fault] = []
        self.outages: dict[str, Fault] = {}
        self.odd_answers: dict[str, Any] = {}
        """route -> the raw JSON body it answers instead, with 200 (see `answer_oddly`)."""
        self.echo_before_response = True
        self.answer_identify = True
        """False: IDENTIFY is never answered (a gateway that never gets ready)."""
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.url = ""
        self.gateway = FakeGateway(self)
        app = web.Application()
        self.gateway.routes(app)
        self._routes(app)
        self.app = app

    # -- setup ---------------------------------------------------------------------------

    def add_guild(self, name: str = "Team", *, guild_id: int | None = None) -> FakeGuild:
        """A server with its @everyone role and the bot as a member with its own role.

        `guild_id` picks the id, e.g. to put a server on a given shard."""
        guild_id = guild_id or self.ids.next()
        found = FakeGuild(guild_id, name)
        found.roles[guild_id] = p.role(guild_id, "@everyone", p.EVERYONE_PERMISSIONS)
        found.bot_role = self.ids.next()
        found.roles[found.bot_role] = p.role(found.bot_role, self.bot["username"],
                                             p.BRIDGE_PERMISSIONS, position=1)
        found.members[BOT_ID] = p.member(self.bot, roles=[found.bot_role])
        self.guilds[guild_id] = found
        return found

    def add_channel(self, guild: FakeGuild, name: str, *, forum: bool = False) -> int:
        channel_id = self.ids.next()
        kind = p.FORUM if forum else p.TEXT
        guild.channels[channel_id] = p.channel(channel_id, guild.id, name, kind,
                                               len(guild.channels))
        return channel_id

    def add_thread(self, guild: FakeGuild, parent: int, name: str) -> int:
        thread_id = self.ids.next()
        guild.threads[thread_id] = p.thread(thread_id, guild.id, parent, name, BOT_ID)
        self.dispatch("THREAD_CREATE", {**guild.threads[thread_id], "newly_created": True},
                      guild.id)
        return thread_id

    def add_member(self, guild: FakeGuild, username: str, *, global_name: str | None = None,
                   nick: str | None = None, bot: bool = False) -> dict[str, Any]:  # fmt: skip
        """A member of the guild; returns its user object (for `push_message`)."""
        found = p.user(self.ids.next(), username, global_name=global_name, bot=bot)
        guild.members[int(found["id"])] = p.member(found, nick=nick)
        return found

    def add_role(self, guild: FakeGuild, name: str) -> int:
        role_id = self.ids.next()
        guild.roles[role_id] = p.role(role_id, name, 0, position=1)
        return role_id

    def set_bot_permissions(self, guild: FakeGuild, permissions: int) -> None:
        """Change the bot's role (e.g. take Manage Webhooks away) and tell the gateway."""
        guild.roles[guild.bot_role]["permissions"] = str(permissions)
        self.dispatch("GUILD_ROLE_UPDATE",
                      {"guild_id": str(guild.id), "role": guild.roles[guild.bot_role]}, guild.id)

    def enable_intent(self, name: str, enabled: bool = True) -> None:
        (self.privileged_enabled.add if enabled else self.privileged_enabled.discard)(name)

    # -- faults --------------------------------------------------------------------------

    def fail_next(self, route: str, *, status: int = 400, code: int = 0,
                  message: str = "Bad Request", times: int = 1) -> None:  # fmt: skip
        for _ in range(times):
            self.faults.append(Fault(route, status, code, message))

    def rate_limit_next(self, route: str, retry_after: float, *, via: bool = True,
                        times: int = 1) -> None:  # fmt: skip
        """Answer 429 like Discord (or, with `via=False`, like Cloudflare in front of it)."""
        for _ in range(times):
            self.faults.append(Fault(route, 429, 0, "You are being rate limited.",
                                     retry_after=retry_after, via=via))

    def stall_next(self, route: str, seconds: float) -> None:
        self.faults.append(Fault(route, stall=seconds))

    def drop_next(self, route: str) -> None:
        """Close the connection instead of answering the next call of `route`."""
        self.faults.append(Fault(route, drop=True))

    def answer_oddly(self, route: str, body: Any) -> None:
        """From now on answer `route` (with the right token) with this raw JSON body and 200
        — what a proxy in between, or an API that changed, might say."""
        self.odd_answers[route] = body

    def fail_always(self, route: str, *, status: int = 503, code: int = 0,
                    message: str = "Service Unavailable") -> None:  # fmt: skip
        self.outages[route] = Fault(route, status, code, message)

    def recover(self, route: str) -> None:
        self.outages.pop(route, None)

    async def drop_gateway(self) -> None:
        """Cut every gateway connection without a close frame (a network drop)."""
        await self.gateway.drop()

    async def close_gateway(self, code: int, message: str = "") -> None:
        await self.gateway.close(code, message)

    def invalidate_sessions(self) -> None:
        """Discord forgot every session: the next RESUME gets INVALID_SESSION."""
        self.gateway.invalidate()

    def expire_interaction(self, interaction_id: int) -> None:
        self.interactions[interaction_id].expired = True

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> str:
        self._runner, self.url = await serve_locally(self.app)
        return self.url

    async def __aenter__(self) -> FakeDiscord:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    async def stop(self) -> None:
        await self.gateway.close(1001)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def api_url(self) -> str:
        return self.url + API

    @property
    def gateway_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/gateway"

    # -- what people do ------------------------------------------------------------------

    def push_message(
        self,
        channel_id: int,
        author: dict[str, Any],
        content: str,
        *,
        reply_to: int | None = None,
        attachments: list[dict[str, Any]] | None = None,
        webhook_id: int | None = None,
    ) -> dict[str, Any]:
        """Someone posts in a channel (or thread); returns the message as Discord stores it.

        `webhook_id` makes it a webhook post (another bridge or integration): then `author`
        is the webhook's name as a user object.
        """
        guild = self._guild_of(channel_id)
        author_member = None if webhook_id else guild.members.get(int(author["id"]))
        data = self._message(
            channel_id, author, content, author_member=author_member,
            reply_to=self.messages.get(reply_to) if reply_to else None,
            attachments=attachments, webhook_id=webhook_id, allowed=None,
        )
        self.dispatch("MESSAGE_CREATE", data, guild.id)
        return data

    def push_edit(self, message_id: int, content: str) -> dict[str, Any]:
        data = self.messages[message_id]
        self._edit(data, content, None)
        return data

    def push_delete(self, message_id: int) -> None:
        data = self.messages[message_id]
        self._delete(data)

    def push_interaction(
        self,
        channel_id: int,
        author: dict[str, Any],
        command: str,
        options: dict[str, str] | None = None,
        *,
        created: datetime | None = None,
    ) -> FakeInteraction:
        """Someone runs a slash command the bot registered for this guild."""
        guild = self._guild_of(channel_id)
        registered = {c["name"]: c for c in self.commands.get(guild.id, [])}
        spec = registered[command]  # KeyError: the bot never registered it here
        interaction_id = self.ids.at(created) if created else self.ids.next()
        found = FakeInteraction(interaction_id, p.url_token(180), channel_id, guild.id,
                                user_id=int(author["id"]))
        inner = {"id": spec["id"], "name": command, "type": 1, "guild_id": str(guild.id),
                 "options": [{"name": k, "type": 3, "value": v}
                             for k, v in (options or {}).items()]}
        self._send_interaction(found, author, inner)
        return found

    def push_component(
        self, message_id: int, author: dict[str, Any], custom_id: str, *, unchecked: bool = False
    ) -> FakeInteraction:
        """Someone presses a button of a message. Discord only sends a `custom_id` the
        message shows now; `unchecked=True` sends any (a stale client, a forged payload)."""
        message = self.messages[message_id]
        if not unchecked and custom_id not in self.posted[message_id].custom_ids():
            raise KeyError(f"message {message_id} has no button {custom_id!r}")
        channel_id = int(message["channel_id"])
        found = FakeInteraction(self.ids.next(), p.url_token(180), channel_id,
                                self._guild_of(channel_id).id, kind=3,
                                user_id=int(author["id"]), message_id=message_id,
                                custom_id=custom_id)
        self._send_interaction(found, author, {"custom_id": custom_id, "component_type": 2},
                               message=message)
        return found

    def submit_modal(
        self, opened_by: FakeInteraction, author: dict[str, Any], values: dict[str, str]
    ) -> FakeInteraction:
        """Someone fills in the modal an interaction was answered with and submits it:
        each text input by its `custom_id`, nested as the modal nested it."""
        form = opened_by.callback
        if opened_by.response != 9 or form is None:
            raise ValueError("that interaction was not answered with a modal")

        def filled(component: dict[str, Any]) -> dict[str, Any]:
            if component.get("type") == 4:
                return {"type": 4, "custom_id": component["custom_id"],
                        "value": values.get(component["custom_id"], "")}
            inner = component.get("components") or (
                [component["component"]] if "component" in component else [])
            key = "components" if "components" in component else "component"
            done = [filled(child) for child in inner]
            return {"type": component["type"], key: done if key == "components" else done[0]}

        found = FakeInteraction(self.ids.next(), p.url_token(180), opened_by.channel_id,
                                opened_by.guild_id, kind=5, user_id=int(author["id"]),
                                message_id=opened_by.message_id, custom_id=form["custom_id"])
        inner = {"custom_id": form["custom_id"],
                 "components": [filled(c) for c in form.get("components", [])]}
        message = self.messages.get(opened_by.message_id or 0)
        self._send_interaction(found, author, inner, message=message)
        return found

    def _send_interaction(self, found: FakeInteraction, author: dict[str, Any],
                          inner: dict[str, Any], *, message: dict[str, Any] | None = None
                          ) -> None:  # fmt: skip
        """INTERACTION_CREATE as Discord sends it: the member (with its roles and
        permissions), the channel, and for a component the message it is on."""
        self.interactions[found.id] = found
        guild = self.guilds[found.guild_id]
        data: dict[str, Any] = {
            "id": str(found.id), "application_id": str(BOT_ID), "type": found.kind,
            "data": inner, "guild_id": str(guild.id), "channel_id": str(found.channel_id),
            "channel": self._channel(found.channel_id),
            "guild": {"id": str(guild.id), "locale": "en-US", "features": []},
            "member": {**guild.members[int(author["id"])],
                       "permissions": str(p.BRIDGE_PERMISSIONS)},
            "token": found.token, "version": 1, "locale": "en-US", "guild_locale": "en-US",
            "app_permissions": str(p.BRIDGE_PERMISSIONS), "entitlements": [],
            "authorizing_integration_owners": {"0": str(guild.id)}, "context": 0,
            "attachment_size_limit": 10_485_760,
        }
        if message is not None:
            data["message"] = message
        self.dispatch("INTERACTION_CREATE", data, guild.id)

    # -- inspection ----------------------------------------------------------------------

    def told(self, interaction: FakeInteraction) -> str | None:
        """What the person who interacted was told: the callback's content, else (after a
        deferral) the followup that replaced "is thinking…"."""
        content = (interaction.callback or {}).get("content")
        if content is None and interaction.followups:
            content = self.messages[interaction.followups[0]]["content"]
        return content

    def calls_to(self, route: str) -> list[Call]:
        return [call for call in self.calls if call.route == route]

    async def wait_until(self, predicate: Callable[[], T | None], timeout: float = 10.0) -> T:
        """Re-check `predicate` after every change the fake sees until it is truthy."""
        async with asyncio.timeout(timeout):
            while not (found := predicate()):
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.05):
                        await self._changed.wait()
        return found

    def shown(self, channel_id: int) -> list[Posted]:
        """What a channel (or thread) shows now, oldest first; ephemeral answers left out."""
        return [posted for posted in sorted(self.posted.values(), key=lambda x: x.id)
                if posted.channel_id == channel_id and not posted.ephemeral]

    def from_bridge(self, channel_id: int) -> list[Posted]:
        """The messages the bridge posted here (by its webhooks or as its bot)."""
        return [posted for posted in self.shown(channel_id)
                if posted.webhook_id in self.webhooks or posted.author == self.bot["username"]]

    @property
    def sessions(self) -> list[Session]:
        return self.gateway.sessions

    def live_sessions(self, shard: tuple[int, int] | None = None) -> list[Session]:
        """Gateway sessions connected now (on `shard`, e.g. (0, 1), if given)."""
        return self.gateway.live(shard)

    @property
    def gateway_frames(self) -> list[dict[str, Any]]:
        """Every frame the clients sent over the gateway, in order."""
        return self.gateway.frames

    @property
    def gateway_paths(self) -> list[str]:
        return self.gateway.paths

    def identifies(self) -> list[dict[str, Any]]:
        return [frame["d"] for frame in self.gateway.frames if frame.get("op") == 2]

    def resumes(self) -> list[dict[str, Any]]:
        return [frame["d"] for frame in self.gateway.frames if frame.get("op") == 6]

    def dispatch(self, event: str, data: dict[str, Any], guild_id: int | None = None) -> None:
        """Send an event to every live session that covers the guild (kept for resumes)."""
        self.gateway.dispatch(event, data, guild_id)

    def note_change(self) -> None:
        self._changed.set()

    # -- what the gateway tells a new session ---------------------------------------------

    def ready_events(self, session: Session) -> list[tuple[str, dict[str, Any]]]:
        """READY, then one GUILD_CREATE per server of the session's shard."""
        mine = [guild for guild in self.guilds.values() if session.covers(guild.id)]
        ready = {
            "v": 10, "user": {**self.bot, "verified": True, "mfa_enabled": False, "flags": 0},
            "guilds": [{"id": str(guild.id), "unavailable": True} for guild in mine],
            "session_id": session.id,
            "resume_gateway_url": self.url.replace("http://", "ws://") + "/resume-gateway",
            "shard": list(session.shard), "application": {"id": str(BOT_ID), "flags": 0},
            "private_channels": [], "relationships": [], "presences": [],
            "guild_join_requests": [], "geo_ordered_rtc_regions": [], "user_settings": {},
        }
        return [("READY", ready),
                *[("GUILD_CREATE", self._guild_payload(guild, session)) for guild in mine]]

    def member_chunk(self, data: dict[str, Any]) -> None:
        guild = self.guilds.get(int(data["guild_id"]))
        if guild is None:
            return
        chunk = {"guild_id": str(guild.id), "members": list(guild.members.values()),
                 "chunk_index": 0, "chunk_count": 1, "nonce": data.get("nonce")}
        self.dispatch("GUILD_MEMBERS_CHUNK", chunk, guild.id)

    def _guild_payload(self, guild: FakeGuild, session: Session) -> dict[str, Any]:
        """Without the presences intent Discord lists only the bot itself among the members
        (`member_count` says how many there are): the rest come by chunk request."""
        last = self._last_ids()
        channels = [{**c, "last_message_id": last.get(int(c["id"]))}
                    for c in guild.channels.values()]
        threads = [{**t, "last_message_id": last.get(int(t["id"]))}
                   for t in guild.threads.values()]
        members = list(guild.members.values())
        listed = members if session.intents & p.PRESENCES_INTENT else [guild.members[BOT_ID]]
        payload = p.guild(guild.id, guild.name, roles=list(guild.roles.values()),
                          channels=channels, threads=threads, members=listed,
                          owner_id=int(self.application["owner"]["id"]))
        payload["member_count"] = len(members)
        return payload

    def _last_ids(self) -> dict[int, str]:
        last: dict[int, str] = {}
        for message_id in sorted(self.messages):
            last[int(self.messages[message_id]["channel_id"])] = str(message_id)
        return last


    # -- REST ----------------------------------------------------------------------------

    def _routes(self, app: web.Application) -> None:
        add = self._add
        add(app, "GET", "/users/@me", "get_me", self._get_me)
        add(app, "GET", "/oauth2/applications/@me", "application_info", self._application_info)
        add(app, "GET", "/gateway/bot", "gateway_bot", self._gateway_bot)
        add(app, "GET", "/gateway", "get_gateway", self._gateway_bot)
        add(app, "GET", "/channels/{channel}", "get_channel", self._get_channel)
        add(app, "GET", "/channels/{channel}/messages", "history", self._history)
        add(app, "POST", "/channels/{channel}/messages", "create_message", self._create_message)
        add(app, "PATCH", "/channels/{channel}/messages/{message}", "edit_message",
            self._edit_message)
        add(app, "DELETE", "/channels/{channel}/messages/{message}", "delete_message",
            self._delete_message)
        add(app, "POST", "/channels/{channel}/typing", "typing", self._typing)
        add(app, "GET", "/channels/{channel}/webhooks", "list_webhooks", self._list_webhooks)
        add(app, "POST", "/channels/{channel}/webhooks", "create_webhook", self._create_webhook)
        add(app, "POST", "/webhooks/{webhook}/{token}", "execute_webhook", self._execute,
            auth=False)
        add(app, "PATCH", "/webhooks/{webhook}/{token}/messages/{message}",
            "edit_webhook_message", self._edit_webhook_message, auth=False)
        add(app, "DELETE", "/webhooks/{webhook}/{token}/messages/{message}",
            "delete_webhook_message", self._delete_webhook_message, auth=False)
        add(app, "PUT", "/applications/{app}/guilds/{guild}/commands", "put_commands",
            self._put_commands)
        add(app, "POST", "/interactions/{interaction}/{token}/callback", "interaction_callback",
            self._interaction_callback, auth=False)

    def _add(self, app: web.Application, method: str, path: str, route: str, handler: Handler,
             *, auth: bool = True) -> None:  # fmt: skip
        async def serve(request: web.Request) -> web.StreamResponse:
            body = None
            if request.can_read_body:
                raw = await request.read()
                body = json.loads(raw) if raw else None
            name = route
            if route.endswith("webhook_message") or route == "execute_webhook":
                if request.match_info["webhook"] == str(BOT_ID):  # an interaction's followups
                    name = route.replace("webhook_message", "followup").replace(
                        "execute_webhook", "followup")
            call = Call(method, name, request.path, dict(request.query), body,
                        dict(request.match_info))
            self.calls.append(call)
            self.note_change()
            fault = self._take_fault(name)
            if fault is not None:
                if fault.drop:
                    assert request.transport is not None
                    request.transport.close()
                    return web.Response()
                if fault.stall:
                    await asyncio.sleep(fault.stall)
                else:
                    return _fault_response(fault)
            if auth and request.headers.get("Authorization") != f"Bot {self.token}":
                return _json({"message": "401: Unauthorized", "code": 0}, 401)
            if name in self.odd_answers:
                return _json(self.odd_answers[name])
            return await handler(request, call)

        app.router.add_route(method, API + path, serve)

    def _take_fault(self, route: str) -> Fault | None:
        if route in self.outages:
            return self.outages[route]
        for index, fault in enumerate(self.faults):
            if fault.route == route:
                return self.faults.pop(index)
        return None

    async def _get_me(self, request: web.Request, call: Call) -> web.Response:
        return _json({**self.bot, "verified": True, "mfa_enabled": False, "flags": 0})

    async def _application_info(self, request: web.Request, call: Call) -> web.Response:
        # The portal's privileged-intent switches show in the application's flags.
        flags = ((1 << 19) if "message_content" in self.privileged_enabled else 0) | (
            (1 << 15) if "members" in self.privileged_enabled else 0)
        return _json({**self.application, "flags": flags})

    async def _gateway_bot(self, request: web.Request, call: Call) -> web.Response:
        return _json({"url": self.url.replace("http://", "ws://") + "/gateway", "shards": 1,
                      "session_start_limit": {"total": 1000, "remaining": 999,
                                              "reset_after": 0, "max_concurrency": 1}})

    async def _get_channel(self, request: web.Request, call: Call) -> web.Response:
        channel_id = int(call.params["channel"])
        try:
            return _json(self._channel(channel_id))
        except KeyError:
            return _error(404, 10003, "Unknown Channel")

    async def _history(self, request: web.Request, call: Call) -> web.Response:
        channel_id = int(call.params["channel"])
        limit = min(100, int(call.query.get("limit", 50)))
        found = sorted((m for m in self.messages.values() if int(m["channel_id"]) == channel_id),
                       key=lambda m: int(m["id"]))
        if "before" in call.query:
            found = [m for m in found if int(m["id"]) < int(call.query["before"])]
        if "after" in call.query:
            found = [m for m in found if int(m["id"]) > int(call.query["after"])][:limit]
        else:
            found = found[-limit:]
        return _json(list(reversed(found)))

    async def _create_message(self, request: web.Request, call: Call) -> web.Response:
        channel_id = int(call.params["channel"])
        body = call.body or {}
        if (problem := _check_content(body.get("content"))) is not None:
            return problem
        components = _checked_components(body.get("components"))
        if isinstance(components, web.Response):
            return components
        reference = body.get("message_reference") or {}
        replied = self.messages.get(int(reference["message_id"])) if reference else None
        data = self._message(channel_id, self.bot, body["content"], reply_to=replied,
                             allowed=body.get("allowed_mentions"), components=components,
                             author_member=self._guild_of(channel_id).members.get(BOT_ID))
        self.versions[int(data["id"])] = [body["content"]]
        await self._deliver(data)
        return _json(data)

    async def _edit_message(self, request: web.Request, call: Call) -> web.Response:
        data = self.messages.get(int(call.params["message"]))
        if data is None:
            return _error(404, 10008, "Unknown Message")
        if data["author"]["id"] != self.bot["id"]:
            return _error(403, 50005, "Cannot edit a message authored by another user")
        body = call.body or {}
        if (problem := _check_content(body.get("content"))) is not None:
            return problem
        components = _checked_components(body.get("components"))
        if isinstance(components, web.Response):
            return components
        self._edit(data, body["content"], body.get("allowed_mentions"), components)
        return _json(data)

    async def _delete_message(self, request: web.Request, call: Call) -> web.Response:
        data = self.messages.get(int(call.params["message"]))
        if data is None:
            return _error(404, 10008, "Unknown Message")
        self._delete(data)
        return web.Response(status=204)

    async def _typing(self, request: web.Request, call: Call) -> web.Response:
        return web.Response(status=204)

    def _may_manage_webhooks(self, channel_id: int) -> bool:
        guild = self._guild_of(channel_id)
        return bool(int(guild.roles[guild.bot_role]["permissions"]) & p.MANAGE_WEBHOOKS)

    async def _list_webhooks(self, request: web.Request, call: Call) -> web.Response:
        channel_id = int(call.params["channel"])
        if not self._may_manage_webhooks(channel_id):
            return _error(403, 50013, "Missing Permissions")
        return _json([hook.as_json() for hook in self.webhooks.values()
                      if hook.channel_id == channel_id])

    async def _create_webhook(self, request: web.Request, call: Call) -> web.Response:
        channel_id = int(call.params["channel"])
        if not self._may_manage_webhooks(channel_id):
            return _error(403, 50013, "Missing Permissions")
        name = (call.body or {}).get("name", "")
        if problem := _username_problem(name):
            return _invalid("name", problem)
        if len([h for h in self.webhooks.values() if h.channel_id == channel_id]) >= 15:
            return _error(400, 30007, "Maximum number of webhooks reached (15)")
        hook = FakeWebhook(self.ids.next(), p.url_token(68), channel_id,
                           self._guild_of(channel_id).id, name, self.bot, BOT_ID)
        self.webhooks[hook.id] = hook
        return _json(hook.as_json())

    def add_user_webhook(self, channel_id: int, creator: dict[str, Any], name: str = "hook"
                         ) -> FakeWebhook:  # fmt: skip
        """A webhook a person made in the channel settings: no application owns it."""
        hook = FakeWebhook(self.ids.next(), p.url_token(68), channel_id,
                           self._guild_of(channel_id).id, name, creator)
        self.webhooks[hook.id] = hook
        return hook

    def delete_webhook(self, webhook_id: int) -> None:
        """Someone removed the webhook in the channel settings."""
        del self.webhooks[webhook_id]

    def _webhook(self, call: Call) -> FakeWebhook | web.Response:
        hook = self.webhooks.get(int(call.params["webhook"]))
        if hook is None or hook.token != call.params["token"]:
            return _error(404, 10015, "Unknown Webhook")
        return hook

    def _thread_target(self, hook: FakeWebhook, call: Call) -> int | web.Response:
        if "thread_id" not in call.query:
            if self._channel(hook.channel_id)["type"] == p.FORUM:
                return _error(400, 220001, "Webhooks posted to forum channels must have a "
                                           "thread_name or thread_id")
            return hook.channel_id
        thread_id = int(call.query["thread_id"])
        found = self._guild_of(hook.channel_id).threads.get(thread_id)
        if found is None or int(found["parent_id"]) != hook.channel_id:
            return _error(400, 10003, "Unknown Channel")
        return thread_id

    async def _execute(self, request: web.Request, call: Call) -> web.Response:
        if int(call.params["webhook"]) == BOT_ID:
            return await self._followup(call)
        hook = self._webhook(call)
        if isinstance(hook, web.Response):
            return hook
        target = self._thread_target(hook, call)
        if isinstance(target, web.Response):
            return target
        body = call.body or {}
        username = body.get("username")
        if username is not None and (problem := _username_problem(username)):
            return _invalid("username", problem)
        if (problem := _check_content(body.get("content"))) is not None:
            return problem
        components = _webhook_components(hook, call)
        if isinstance(components, web.Response):
            return components
        author = {"id": str(hook.id), "username": username or hook.name, "avatar": None,
                  "discriminator": "0000", "bot": True, "global_name": None}
        data = self._message(target, author, body["content"], webhook_id=hook.id,
                             allowed=body.get("allowed_mentions"), components=components)
        self.versions[int(data["id"])] = [body["content"]]
        await self._deliver(data)
        if call.query.get("wait") in ("1", "true", "True"):
            return _json(data)
        return web.Response(status=204)

    def _webhook_message(self, call: Call) -> dict[str, Any] | web.Response:
        """The message a webhook route names, if that webhook posted it."""
        hook = self._webhook(call)
        if isinstance(hook, web.Response):
            return hook
        data = self.messages.get(int(call.params["message"]))
        if data is None or data.get("webhook_id") != str(hook.id):
            return _error(404, 10008, "Unknown Message")
        return data

    async def _edit_webhook_message(self, request: web.Request, call: Call) -> web.Response:
        if int(call.params["webhook"]) == BOT_ID:
            return await self._edit_followup(call)
        data = self._webhook_message(call)
        if isinstance(data, web.Response):
            return data
        body = call.body or {}
        if (problem := _check_content(body.get("content"))) is not None:
            return problem
        hook = self.webhooks[int(call.params["webhook"])]
        components = _webhook_components(hook, call)
        if isinstance(components, web.Response):
            return components
        self._edit(data, body["content"], body.get("allowed_mentions"), components)
        return _json(data)

    async def _delete_webhook_message(self, request: web.Request, call: Call) -> web.Response:
        if int(call.params["webhook"]) == BOT_ID:
            return await self._delete_followup(call)
        data = self._webhook_message(call)
        if isinstance(data, web.Response):
            return data
        self._delete(data)
        return web.Response(status=204)

    async def _put_commands(self, request: web.Request, call: Call) -> web.Response:
        guild_id = int(call.params["guild"])
        if guild_id not in self.guilds:
            return _error(403, 50001, "Missing Access")
        existing = {c["name"]: c for c in self.commands.get(guild_id, [])}
        stored = []
        for command in call.body or []:
            kept = existing.get(command["name"], {}).get("id") or str(self.ids.next())
            stored.append({**command, "id": kept, "application_id": str(BOT_ID),
                           "guild_id": str(guild_id), "version": str(self.ids.next()),
                           "default_member_permissions": None, "dm_permission": True,
                           "nsfw": False, "type": command.get("type", 1)})
        self.commands[guild_id] = stored
        return _json(stored)

    # -- interactions --------------------------------------------------------------------

    def _interaction_by_token(self, token: str) -> FakeInteraction | None:
        return next((i for i in self.interactions.values() if i.token == token), None)

    async def _interaction_callback(self, request: web.Request, call: Call) -> web.Response:
        found = self.interactions.get(int(call.params["interaction"]))
        if found is None or found.token != call.params["token"] or found.expired:
            return _error(404, 10062, "Unknown interaction")
        if found.response is not None:
            return _error(400, 40060, "Interaction has already been acknowledged.")
        body = call.body or {}
        kind, data = int(body["type"]), body.get("data") or {}
        if kind in (6, 7, 9) and found.kind == 2:
            return _error(400, 40004, "Interaction response type not allowed here")
        if kind == 9 and (problem := _modal_problem(data)) is not None:
            return problem
        found.response = kind
        found.callback = data
        found.ephemeral = bool(int(data.get("flags") or 0) & 64)
        if kind in (6, 7, 9):
            return await self._update_or_modal(found, kind, data)
        message = self._message(found.channel_id, self.bot, data.get("content") or "",
                                allowed=data.get("allowed_mentions"), flags=data.get("flags") or 0,
                                ephemeral=found.ephemeral, kind=20)
        found.original = int(message["id"])
        if kind == 4:
            await self._deliver(message, dispatch=not found.ephemeral)
        return _json({
            "interaction": {"id": str(found.id), "type": found.kind,
                            "response_message_id": message["id"],
                            "response_message_loading": kind == 5,
                            "response_message_ephemeral": found.ephemeral},
            "resource": {"type": kind, "message": message},
        })

    async def _update_or_modal(self, found: FakeInteraction, kind: int, data: dict[str, Any]
                               ) -> web.Response:  # fmt: skip
        """A component's answer that changes its message (7), acknowledges it silently (6),
        or opens a modal (9): no new message."""
        message = self.messages.get(found.message_id or 0)
        if kind == 7 and message is not None:
            components = _checked_components(data.get("components"))
            if isinstance(components, web.Response):
                return components
            self._edit(message, data.get("content", message["content"]),
                       data.get("allowed_mentions"), components)
        answer: dict[str, Any] = {"interaction": {"id": str(found.id), "type": found.kind},
                                  "resource": {"type": kind}}
        if kind in (6, 7) and message is not None:
            answer["resource"]["message"] = message
            answer["interaction"]["response_message_id"] = message["id"]
        return _json(answer)

    async def _followup(self, call: Call) -> web.Response:
        found = self._interaction_by_token(call.params["token"])
        if found is None or found.expired or found.response is None:
            return _error(401, 50027, "Invalid Webhook Token")
        body = call.body or {}
        if (problem := _check_content(body.get("content"))) is not None:
            return problem
        if found.response == 5 and found.original is not None and not found.followups:
            # The first followup after a deferral replaces the "is thinking…" message.
            data = self.messages[found.original]
            data["content"] = body["content"]
            self.posted[int(data["id"])].content = body["content"]
            found.followups.append(int(data["id"]))
            self.posted[int(data["id"])].pinged = p.pings(body["content"],
                                                          body.get("allowed_mentions"))
            self.note_change()
            return _json(data)
        ephemeral = bool(int(body.get("flags") or 0) & 64)
        data = self._message(found.channel_id, self.bot, body["content"], ephemeral=ephemeral,
                             allowed=body.get("allowed_mentions"), flags=body.get("flags") or 0,
                             kind=20)
        found.followups.append(int(data["id"]))
        await self._deliver(data, dispatch=not ephemeral)
        return _json(data)

    def _followup_message(self, call: Call) -> dict[str, Any] | web.Response:
        """The interaction message a followup route names (`@original` or an id)."""
        found = self._interaction_by_token(call.params["token"])
        if found is None or found.expired:
            return _error(401, 50027, "Invalid Webhook Token")
        wanted = call.params["message"]
        message_id = found.original if wanted == "@original" else int(wanted)
        data = self.messages.get(message_id or 0)
        return data if data is not None else _error(404, 10008, "Unknown Message")

    async def _edit_followup(self, call: Call) -> web.Response:
        data = self._followup_message(call)
        if isinstance(data, web.Response):
            return data
        self._edit(data, (call.body or {})["content"], (call.body or {}).get("allowed_mentions"))
        return _json(data)

    async def _delete_followup(self, call: Call) -> web.Response:
        data = self._followup_message(call)
        if isinstance(data, web.Response):
            return data
        self._delete(data)
        return web.Response(status=204)

    # -- messages ------------------------------------------------------------------------

    def _message(
        self,
        channel_id: int,
        author: dict[str, Any],
        content: str,
        *,
        allowed: dict[str, Any] | None,
        author_member: dict[str, Any] | None = None,
        reply_to: dict[str, Any] | None = None,
        attachments: list[dict[str, Any]] | None = None,
        webhook_id: int | None = None,
        flags: int = 0,
        ephemeral: bool = False,
        kind: int | None = None,
        components: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Store a new message the way Discord resolves it, and what it showed."""
        guild = self._guild_of(channel_id)
        users, roles, _ = p.mentioned_ids(content)
        mentioned = [
            {**guild.members[u]["user"], "member": {k: v for k, v in guild.members[u].items()
                                                    if k != "user"}}
            for u in dict.fromkeys(users) if u in guild.members
        ]
        pinged = p.pings(content, allowed)
        data = p.message(
            self.ids.next(), channel_id, author, content, guild_id=guild.id,
            author_member=author_member, mentions=mentioned,
            mention_roles=[r for r in roles if r in guild.roles],
            mention_everyone=pinged["everyone"], attachments=attachments, reply_to=reply_to,
            webhook_id=webhook_id, flags=flags, kind=kind,
        )
        message_id = int(data["id"])
        data["components"] = components or []
        self.messages[message_id] = data
        self.posted[message_id] = Posted(message_id, channel_id, author["username"], content,
                                         webhook_id, pinged, ephemeral,
                                         components=list(components or []))
        self.note_change()
        return data

    async def _deliver(self, data: dict[str, Any], *, dispatch: bool = True) -> None:
        """MESSAGE_CREATE for a post made over REST, sent before the REST answer."""
        if not dispatch:
            return
        self.dispatch("MESSAGE_CREATE", data, self._guild_of(int(data["channel_id"])).id)
        if self.echo_before_response:
            await self.gateway.flushed()

    def _edit(self, data: dict[str, Any], content: str, allowed: dict[str, Any] | None,
              components: list[dict[str, Any]] | None = None) -> None:  # fmt: skip
        """`components` None: the edit left them as they were."""
        data["content"] = content
        data["edited_timestamp"] = p.iso()
        message_id = int(data["id"])
        posted = self.posted[message_id]
        posted.content = content
        if components is not None:
            data["components"] = posted.components = list(components)
        posted.edits += 1
        if message_id in self.versions:
            self.versions[message_id].append(content)
        posted.pinged = p.pings(content, allowed)
        if not posted.ephemeral:
            self.dispatch("MESSAGE_UPDATE", data, self._guild_of(posted.channel_id).id)
        self.note_change()

    def _delete(self, data: dict[str, Any]) -> None:
        message_id = int(data["id"])
        del self.messages[message_id]
        posted = self.posted.pop(message_id)
        if message_id in self.versions:
            self.versions[message_id].append(None)
        guild = self._guild_of(posted.channel_id)
        self.dispatch("MESSAGE_DELETE", {"id": str(message_id), "channel_id": data["channel_id"],
                                         "guild_id": str(guild.id)}, guild.id)

    def _guild_of(self, channel_id: int) -> FakeGuild:
        for guild in self.guilds.values():
            if channel_id in guild.channels or channel_id in guild.threads:
                return guild
        raise KeyError(f"no guild has channel {channel_id}")

    def _channel(self, channel_id: int) -> dict[str, Any]:
        guild = self._guild_of(channel_id)
        return guild.channels.get(channel_id) or guild.threads[channel_id]


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """Exactly `application/json`: discord.py reads a body with `; charset=…` as text."""
    return web.Response(body=json.dumps(body).encode(), status=status,
                        headers={"Content-Type": "application/json", **(headers or {})})


def _error(status: int, code: int, message: str, errors: dict[str, Any] | None = None
           ) -> web.Response:  # fmt: skip
    body: dict[str, Any] = {"message": message, "code": code}
    if errors:
        body["errors"] = errors
    return _json(body, status)


def _invalid(field_name: str, problem: str) -> web.Response:
    return _error(400, 50035, "Invalid Form Body",
                  {field_name: {"_errors": [{"code": "INVALID", "message": problem}]}})


def _fault_response(fault: Fault) -> web.Response:
    if fault.status != 429:
        return _error(fault.status, fault.code, fault.message)
    wait = fault.retry_after or 1.0
    headers = {"Retry-After": str(max(1, round(wait))), "X-RateLimit-Limit": "5",
               "X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": str(wait),
               "X-RateLimit-Bucket": "fake-bucket", "X-RateLimit-Scope": "user"}
    if fault.via:
        headers["Via"] = "1.1 google"
    return _json({"message": fault.message, "retry_after": wait, "global": False, "code": 0},
                 429, headers)


def _check_content(content: Any) -> web.Response | None:
    if not isinstance(content, str) or not content.strip():
        return _error(400, 50006, "Cannot send an empty message")
    if len(content) > 2000:
        return _invalid("content", "Must be 2000 or fewer in length.")
    return None


MAX_ROWS, MAX_PER_ROW, MAX_LABEL, MAX_CUSTOM_ID = 5, 5, 80, 100


def _checked_components(value: Any) -> list[dict[str, Any]] | web.Response | None:
    """A message's `components` as Discord checks them; None when the call has none."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_ROWS:
        return _invalid("components", f"Must be {MAX_ROWS} or fewer in length.")
    seen: set[str] = set()
    for row in value:
        if row.get("type") != 1:
            return _invalid("components", "Top-level components must be action rows.")
        buttons = row.get("components") or []
        if not 1 <= len(buttons) <= MAX_PER_ROW:
            return _invalid("components", f"An action row holds 1 to {MAX_PER_ROW} buttons.")
        for button in buttons:
            if button.get("type") != 2:
                return _invalid("components", "Only buttons are understood by this fake.")
            if len(button.get("label") or "") > MAX_LABEL:
                return _invalid("label", f"Must be {MAX_LABEL} or fewer in length.")
            if button.get("style") == 5:
                continue  # a link button: a url, no custom_id
            custom_id = button.get("custom_id")
            if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= MAX_CUSTOM_ID:
                return _invalid("custom_id", f"Must be between 1 and {MAX_CUSTOM_ID} in length.")
            if custom_id in seen:
                return _invalid("custom_id", "Component custom id cannot be duplicated")
            seen.add(custom_id)
    return value


def _webhook_components(hook: FakeWebhook, call: Call
                        ) -> list[dict[str, Any]] | web.Response | None:  # fmt: skip
    """Components on a webhook post: an application's webhook may carry any; another's
    only non-interactive ones, and only when the call says `with_components`."""
    checked = _checked_components((call.body or {}).get("components"))
    if checked is None or isinstance(checked, web.Response) or hook.application_id:
        return checked
    if call.query.get("with_components") not in ("1", "true", "True"):
        return None  # ignored, as Discord does
    if any(button.get("style") != 5 for row in checked for button in row["components"]):
        return _invalid("components", "Interactive components can only be sent by "
                                      "application-owned webhooks.")
    return checked


def _modal_problem(data: dict[str, Any]) -> web.Response | None:
    custom_id = data.get("custom_id")
    if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= MAX_CUSTOM_ID:
        return _invalid("custom_id", f"Must be between 1 and {MAX_CUSTOM_ID} in length.")
    if not 1 <= len(data.get("title") or "") <= 45:
        return _invalid("title", "Must be between 1 and 45 in length.")
    if not 1 <= len(data.get("components") or []) <= MAX_ROWS:
        return _invalid("components", f"A modal holds 1 to {MAX_ROWS} components.")
    return None


def _username_problem(name: str) -> str | None:
    """Discord's rules for a webhook's name and a webhook post's `username`."""
    if not 1 <= len(name) <= 80:
        return "Must be between 1 and 80 in length."
    for word in ("clyde", "discord"):
        if word in name.casefold():
            return f'Username cannot contain "{word}"'
    return None

