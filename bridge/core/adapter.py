"""The adapter interface: a few verbs plus a capability record.

Optional abilities (editing, deleting, typing indicators) are capability flags, not
subclasses; the core asks `capabilities` before it calls them.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from bridge.config.sections import CommandNames
from bridge.core.account_state import AccountState
from bridge.core.binding import Binding
from bridge.core.model import Inbound, Outbound, PlatformRef
from bridge.core.taps import Tap, TapReply
from bridge.store.pacing import Budget

if TYPE_CHECKING:
    from bridge.text import Directory
    from bridge.web.server import WebServer

InboundSink = Callable[[Inbound], Awaitable[None]]
"""The core's entry point: adapters hand every normalized platform message to it."""
TapSink = Callable[[Tap], Awaitable[TapReply]]
"""Where an adapter with `cards` hands a tap on a card's button; the reply is what to tell
the person at once, and the card as it now stands."""

CHATS_REMEMBERED = 10_000
"""How many chats `Adapter.note_chat` remembers having logged: a bot in many chats (or a
flood of new ones) must not grow memory without end; one forgotten long ago is logged again."""


@dataclass(frozen=True, slots=True)
class Capabilities:
    dialect: str
    """The `bridge.text` platform name used to render text for this adapter."""
    max_length: int
    """Longest message the platform accepts, as it counts characters."""
    can_edit: bool = False
    can_delete: bool = False
    """Can remove a posted message (leftover parts of a streamed reply that shrank)."""
    custom_sender: bool = False
    """Can post under a bot's own name (Discord webhook, Slack username); else name prefix."""
    threads: bool = False
    typing: bool = False
    min_edit_interval: float = 1.0
    """Seconds between two edits of one message while a reply streams."""
    request_panel: bool = False
    """Shows a live list of the chat's open protocol requests (`update_requests`)."""
    cards: bool = False
    """Draws a bot's question (`Outbound.card`) with buttons, and hands taps on them to the
    core (`Adapter.taps`); edits redraw a card once it is answered, expired or closed."""
    echoes_own_posts: bool = True
    """The platform may hand the bridge's own posts back to it as incoming messages, so each
    incoming message is looked up in the store first (the own-echo filter). An adapter that
    never does (the webchat posts into its rooms itself) saves that read on every message."""
    replies: bool = True
    """People can reply to a posted message and the adapter says which one (`Inbound.
    reply_to`): a reply to a bot's CLARIFY answers it. With neither this nor
    `echoes_own_posts` nothing ever looks a post up, so the bridge keeps no record of each
    one (a write, and its page of the store, saved on every reply)."""
    redelivers: bool = True
    """The platform may hand the bridge one message twice (a gateway replaying after a
    reconnect, a webhook retried), so each incoming message's key is looked up in the store
    first (the duplicate filter). An adapter that gives each message a fresh id once and
    filters its own resends (the webchat's rooms) saves that read on every message; a
    repeat that still got through is refused by the BCN, whose idempotency key is the
    message id (`duplicate: true`, docs/hub.md)."""
    posts_in_process: bool = False
    """Posting is a call inside this process that no rate limit, outage or timeout can delay
    (the webchat's own rooms). The outbox is there to wait those out, so a bot's reply to a
    person in an idle lane is posted during the hub's delivery instead of being queued and
    read back: the hub's delivery is acked once it is posted, and a crash before that makes
    the hub deliver it again (see `Outbox.post_now`)."""

    @property
    def looks_posts_up(self) -> bool:
        """Does anything look the bridge's own posts up again (`echoes_own_posts`,
        `replies`)? Only then is a record of each one worth its write."""
        return self.echoes_own_posts or self.replies


class SendError(Exception):
    """An adapter could not deliver an `Outbound`."""

    def __init__(self, message: str, *, transient: bool, retry_after: float | None = None):
        super().__init__(message)
        self.transient = transient
        self.retry_after = retry_after


class TransientSendError(SendError):
    """Worth retrying later (429, network, 5xx); `retry_after` in seconds when known."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message, transient=True, retry_after=retry_after)


class PermanentSendError(SendError):
    """Retrying will not help (chat gone, bot kicked); the outbox logs and moves on."""

    def __init__(self, message: str):
        super().__init__(message, transient=False)


class AdapterStartError(RuntimeError):
    """An account could not start, for a reason its owner must fix (a rejected token, a
    switch off in the platform's settings).

    The message is one complete sentence, safe to log (no secret), and says what to do;
    `bcn-bridge run` prints it as one line and exits instead of showing a traceback.
    """


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """One line of `bcn-bridge doctor`: what was checked, how it went, and the fix."""

    status: str
    """"ok", "warn" (works, but something is off) or "fail"."""
    what: str
    fix: str = ""

    @classmethod
    def ok(cls, what: str) -> Diagnosis:
        return cls("ok", what)

    @classmethod
    def warn(cls, what: str, fix: str = "") -> Diagnosis:
        return cls("warn", what, fix)

    @classmethod
    def fail(cls, what: str, fix: str = "") -> Diagnosis:
        return cls("fail", what, fix)


class Adapter(ABC):
    """One platform account. Subclasses declare their account config model next to them.

    The base owns what every platform needs alike, so an adapter holds only its platform's
    part: the account config as the adapter's own model (`settings`), logging each chat once
    with the id to bind (`note_chat`), the bound chat ids (`bound_chats`) and the account's
    durable records (`state`, with `state.keeper` for leases). For outages and reconnects see
    `bridge.core.outage` and `bridge.core.reconnect`.
    """

    channel_type: ClassVar[str]
    capabilities: ClassVar[Capabilities]
    config_model: ClassVar[type[BaseModel]]

    def __init__(
        self, account: str, config: BaseModel, sink: InboundSink, *, web: WebServer | None = None
    ) -> None:
        self.account = account
        self.settings = self.coerce_config(config)
        """The account's config as `config_model` (subclasses annotate the narrower type)."""
        self.sink = sink
        self.web = web
        self.bindings: list[Binding] = []
        self.bound_chats: frozenset[str] = frozenset()
        """The chat ids the bindings name (of any thread), for `note_chat` and the adapter."""
        self.commands = CommandNames()
        self.state = AccountState.in_memory(self.channel)
        """Durable per-account records; the relay swaps in its own store before `start()`."""
        self.started = False
        """Set by the relay once `start()` returned, cleared when it stops the adapter."""
        self.taps: TapSink | None = None
        """Set by the relay: where taps on cards go (adapters with `cards`)."""
        self.log = logging.getLogger(type(self).__module__)
        """The adapter's module logger: lines the base writes for it sit with its own (and
        `caplog.set_level(..., logger="adapters.<platform>")` sees them)."""
        self._chats_noted: OrderedDict[str, None] = OrderedDict()

    @classmethod
    def coerce_config(cls, config: BaseModel) -> BaseModel:
        """`config` as this adapter's `config_model`: the same object when it is one already.

        The config loader validates each account against the model the registry names, but
        tests and embedders may hand over another model with the same fields (or a plain
        one), so the coercion is done once here instead of in every adapter."""
        model = cls.config_model
        if isinstance(config, model):
            return config
        return model.model_validate(config.model_dump())

    @property
    def channel(self) -> str:
        return f"{self.channel_type}:{self.account}"

    def use_bindings(self, bindings: list[Binding]) -> None:
        """The bindings of this account, before `start()` (e.g. to flag unbound chats)."""
        self.bindings = bindings
        self.bound_chats = frozenset(binding.chat for binding in bindings)

    def first_sight(self, chat_id: str) -> bool:
        """True the first time a chat is seen (of the last `CHATS_REMEMBERED`), else False.

        For an adapter that must do some work (an API call for the chat's name) before it
        calls `note_chat(..., once=False)`; others call `note_chat` alone."""
        if chat_id in self._chats_noted:
            self._chats_noted.move_to_end(chat_id)
            return False
        self._chats_noted[chat_id] = None
        while len(self._chats_noted) > CHATS_REMEMBERED:
            self._chats_noted.popitem(last=False)
        return True

    def note_chat(self, chat_id: str, described: str, *, once: bool = True) -> None:
        """Log a chat the account sees, once, with whether it is bound, so people can find
        the id to put in a binding: `<channel> <described> (not bound; bind it with chat:
        "<id>")` at INFO. `described` is the platform's wording (`sees #general (123) in
        server "Team"`). `once=False` logs even a chat logged before (the adapter decided,
        e.g. with `first_sight`, or the bot was just added to it)."""
        if once and not self.first_sight(chat_id):
            return
        self.log.info(
            "%s %s (%s)", self.channel, described,
            "bound" if chat_id in self.bound_chats
            else f'not bound; bind it with chat: "{chat_id}"',
        )

    def use_commands(self, commands: CommandNames) -> None:
        """The chat command words in use (for platforms with a native command menu)."""
        self.commands = commands

    def use_group_bots(self, group: str, names: Sequence[str]) -> None:
        """The bots of `group`, which some of this account's chats are bound to, as the hub
        listed them just now (the relay says it again after every change, online or not).

        The default ignores them. An adapter where people choose their own display names
        (the webchat) keeps people from taking one of these, whether or not the bot has
        spoken there yet.
        """
        return None

    def use_state(self, state: AccountState) -> None:
        """The store-backed records of this account (shared by every bridge instance)."""
        self.state = state

    def directory(self, chat_id: str) -> Directory | None:
        """Who is who in a chat, so a bot's `@Name` becomes a real platform mention.

        None (the default) leaves mentions as plain `@Name` text.
        """
        return None

    def pacing(self, chat_id: str) -> Sequence[Budget]:
        """The send budgets a post or edit into `chat_id` spends from: the platform's
        published limits (per chat, per group, per account), shared by every instance
        through the store, so the outbox waits its turn instead of drawing a 429.

        None (the default) where nothing needs pacing: the webchat, or a library that paces
        itself from the platform's own rate-limit headers (discord.py's route buckets)."""
        return ()

    def health(self) -> str | None:
        """Why this account cannot relay right now (`/readyz` names it), or None when it can.

        The default is up once started; adapters whose connection can drop while running
        (long polling, a socket) say so while it is down.
        """
        return None if self.started else "not started"

    async def diagnose(self) -> list[Diagnosis]:
        """Check the account live without starting it (`bcn-bridge doctor`): the token is
        accepted, the permissions are there. Adapters with nothing to ask say so."""
        return [Diagnosis.ok(f"{self.channel}: nothing to check before it starts")]

    @abstractmethod
    async def start(self) -> None:
        """Connect to the platform; return once messages can flow."""

    @abstractmethod
    async def stop(self) -> None:
        """Disconnect cleanly; safe to call twice."""

    @abstractmethod
    async def send(self, out: Outbound) -> PlatformRef:
        """Post a message; raise `SendError` subclasses on failure."""

    async def edit(self, ref: PlatformRef, out: Outbound) -> None:
        """Replace a posted message's text; only called when `capabilities.can_edit`."""
        raise NotImplementedError(f"{type(self).__name__} cannot edit messages")

    async def delete(self, ref: PlatformRef) -> None:
        """Remove a posted message; only called when `capabilities.can_delete`.

        A message that is already gone counts as deleted (a restart may repeat the call).
        """
        raise NotImplementedError(f"{type(self).__name__} cannot delete messages")

    async def typing(self, chat_id: str, thread_id: str | None = None) -> None:
        """Show a typing indicator; only called when `capabilities.typing`."""
        raise NotImplementedError(f"{type(self).__name__} has no typing indicator")

    async def update_requests(self, chat_id: str, requests: list[dict[str, Any]]) -> None:
        """Replace the chat's open-request panel; only called when `request_panel`."""
        raise NotImplementedError(f"{type(self).__name__} has no request panel")
