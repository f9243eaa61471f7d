"""The `hub:` config section, a self-contained pydantic model.

The standalone `bcn-bridge hub` command and the bridge's own config file both load this
same section, so it imports nothing from `bridge.config`: loading (env expansion, file
secrets, error locations) is the loader's job, validation is this model's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bridge.bcn.versions import CURRENT_PROTOCOL_VERSION
from bridge.listen import parse_listen
from bridge.text.lookalike import invisible_characters, mixed_scripts

MAX_GROUP_ID_LENGTH = 78
"""Keeps `{group}:channel_{type}_{8 hex}` within 128 characters (the channel link's limit)."""

RESERVED_NAMES = frozenset({"all"})
"""`@all` addresses everyone, so no bot may be called that."""


def check_bot_name(name: str) -> str:
    """A bot name must be addressable as `@name` and unambiguous; returns it stripped.

    Unambiguous also to the eye: no invisible characters and no mix of look-alike alphabets
    (a Cyrillic "е" in a Latin name), so a name cannot pose as another bot's. Names that
    merely look like an existing bot's are refused by the registry, which knows the others.
    """
    stripped = name.strip()
    if not stripped or len(stripped) > 64:
        raise ValueError("a bot name must be 1-64 characters")
    if stripped.startswith("@"):
        raise ValueError(f"a bot name must not start with '@': {stripped!r}")
    if any(ch < " " for ch in stripped):
        raise ValueError("a bot name must not contain control characters")
    hidden = invisible_characters(stripped)
    if hidden:
        raise ValueError(f"a bot name must not contain invisible characters ({', '.join(hidden)})"
                         ": they let one name pose as another")
    scripts = mixed_scripts(stripped)
    if scripts:
        raise ValueError(f"a bot name must be written in one alphabet, not a mix of "
                         f"{' and '.join(s.title() for s in scripts)}: mixed letters let one "
                         "name pose as another")
    if stripped.casefold() in RESERVED_NAMES:
        raise ValueError(f"{stripped!r} is reserved (@all addresses every bot)")
    return stripped


class GroupConfig(BaseModel):
    """A BCN group: who is in it, who answers by default, and whether newcomers join."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=MAX_GROUP_ID_LENGTH)
    name: str = ""
    driver: str | None = Field(
        None, description="Bot name that answers messages which address nobody in particular."
    )
    bots: list[str] = Field(default_factory=list, description="Member bots, by name.")
    auto_join: bool = Field(False, description="Every bot registering later joins this group.")
    auto_join_limit: int = Field(
        100, ge=0,
        description="Bots not listed in `bots` that may join through auto_join; once that many "
        "have, anonymous registration is refused (a flood of them costs every link a refresh).",
    )
    type: Literal["default", "manager_worker"] = Field(
        "default",
        description="manager_worker: the driver is the manager and hands out tasks "
        "(task.dispatch) to the other members, its workers.",
    )

    @field_validator("id")
    @classmethod
    def _id_chars(cls, value: str) -> str:
        if ":" in value or any(ch.isspace() for ch in value):
            raise ValueError("a group id must not contain ':' or whitespace")
        return value

    @field_validator("bots")
    @classmethod
    def _bot_names(cls, value: list[str]) -> list[str]:
        return [check_bot_name(name) for name in value]

    @model_validator(mode="after")
    def _driver_is_member(self) -> GroupConfig:
        """A driver is a member by definition; listing it twice is not required."""
        if not self.name:
            self.name = self.id
        if self.driver is not None:
            self.driver = check_bot_name(self.driver)
            if self.driver.casefold() not in {name.casefold() for name in self.bots}:
                self.bots.insert(0, self.driver)
        return self


class BotConfig(BaseModel):
    """A pre-provisioned bot identity: fixed name, fixed token (the bot sends it on connect)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    token: str = Field(min_length=8)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_bot_name(value)


class DeprecationNotice(BaseModel):
    """Sent in the `bot.connect` answer to bots that negotiate a version due for removal."""

    model_config = ConfigDict(extra="forbid")

    message: str
    sunset_date: str | None = None


class HubConfig(BaseModel):
    """Everything the embedded hub needs; every timing is configurable so tests run fast."""

    model_config = ConfigDict(extra="forbid")

    listen: str = "127.0.0.1:8765"
    data_dir: Path = Path("./data")
    link_tokens: list[str] = Field(
        default_factory=list, description="Credentials accepted from channel links."
    )
    register_tokens: list[str] = Field(
        default_factory=list,
        description="Onboarding tokens accepted by POST /register (bots register themselves).",
    )
    registration: Literal["open", "listed"] = Field(
        "open",
        description="Who may register a bot by connecting to /ws/bot without a token: "
        "`open` anyone who reaches the hub; `listed` only the names in a group's `bots` "
        "(bots in `hub.bots` have tokens, POST /register needs a register token either way).",
    )
    groups: list[GroupConfig] = Field(default_factory=list)
    bots: list[BotConfig] = Field(default_factory=list)

    min_protocol_version: int = Field(1, ge=1, le=CURRENT_PROTOCOL_VERSION)
    deprecations: dict[int, DeprecationNotice] = Field(
        default_factory=dict, description="Notice per protocol version, e.g. {1: {...}}."
    )
    bot_ttl_seconds: float = Field(300.0, gt=0, description="Offline without a heartbeat.")
    link_ttl_seconds: float = Field(120.0, gt=0, description="Drop a silent channel link.")
    sweep_interval_seconds: float | None = Field(
        None, gt=0, description="How often expiry is checked; default a quarter of the TTLs."
    )
    handshake_timeout_seconds: float = Field(10.0, gt=0)
    probe_timeout_seconds: float = Field(
        3.0, gt=0,
        description="A bot connecting while its old socket is live is refused "
        "(already_connected) unless that socket fails to answer a ping within this time.",
    )
    request_timeout_seconds: float = Field(
        30.0, gt=0, description="How long the hub waits for a bot's or link's answer."
    )
    run_timeout_ms: int = Field(
        300_000, gt=0, description="`timeout_ms` sent with chat.send; runs silent longer end."
    )
    run_reconnect_grace_seconds: float = Field(
        5.0, ge=0,
        description="A run whose bot goes offline ends with an error after this long, unless "
        "the bot (reconnected) sends an event of that run first.",
    )
    reconnect_grace_seconds: float = Field(
        15.0, ge=0,
        description="After a start, a message for a bot that was online before waits this long "
        "for it to reconnect before the chat is told no bot is available (0: no grace).",
    )
    held_max_per_binding: int = Field(
        100, ge=1, description="Messages one binding may hold during the reconnect grace."
    )
    abort_ack_wait_seconds: float = Field(
        2.0, ge=0, description="How long channel.abort waits for a chat.send ACK in flight."
    )
    max_bot_turns: int = Field(
        12, ge=1, description="Consecutive bot finals routed without a human before stopping."
    )
    bot_reply_default: str = Field(
        "driver",
        pattern="^(driver|observe)$",
        description="A bot final with no routing and no mentions: driver answers, or all observe.",
    )
    pending_max_per_binding: int = Field(10_000, ge=1)
    pending_max_age_seconds: float = Field(86_400.0, gt=0)
    deliver_window: int = Field(64, ge=1, description="Un-acked deliveries in flight per binding.")
    send_queue_chars: int = Field(
        262_144, ge=1024,
        description="Characters of frames one connection (bot or link) may have waiting to be "
        "written to its socket. A bot's chat.inject beyond it is shed and its chat.send fails "
        "visibly; a link's deliveries wait in their outbox.",
    )
    bot_queue_max: int = Field(
        400, ge=1,
        description="Requests to one bot not answered yet (queued, on the wire, unread), at "
        "most: a chat.send beyond it fails at once, with a notice in the chat.",
    )
    observer_queue_max: int = Field(
        200, ge=1,
        description="From this many unanswered requests to a bot on, chat.inject to it is shed "
        "(counted, logged, the bot told) until it is down to half of it again.",
    )
    observer_shed_limit: int = Field(
        1000, ge=1,
        description="chat.inject shed in a row, the bot never catching up, before the hub "
        "disconnects it (close code 4003).",
    )
    max_requests_in_flight: int = Field(
        256, ge=1,
        description="Requests from one bot or link handled at once; at the bound the hub "
        "stops reading that socket until one is answered.",
    )
    transcript_limit: int = Field(200, ge=1, description="Messages kept per channel session.")
    dedup_limit: int = Field(10_000, ge=1, description="Inbound msg_ids remembered per binding.")
    identity_secret: str | None = Field(
        None, description="Key for user pseudonyms; generated and kept in hub.db (0600) when unset."
    )

    # Registration flood limits (anyone who can reach the hub can register a bot).
    participants_notice_interval_seconds: float = Field(
        0.5, ge=0,
        description="At most one channel.participants.changed per group this often; changes "
        "in between are announced together at its end (0: every change at once).",
    )
    register_rate_per_minute: float = Field(
        20.0, ge=0,
        description="Registrations (POST /register, bot.connect without a token) one IP address "
        "may make per minute, after a burst of `register_burst` (0: no limit).",
    )
    register_burst: int = Field(20, ge=1)
    reap_unconnected_after_seconds: float | None = Field(
        3600.0, gt=0,
        description="A registered bot that never connected is forgotten after this long "
        "(its token stops working); null keeps them.",
    )

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        parse_listen(value)
        return value

    @field_validator("link_tokens", "register_tokens")
    @classmethod
    def _tokens(cls, value: list[str]) -> list[str]:
        if any(not token.strip() for token in value):
            raise ValueError("a token must not be empty (is its environment variable set?)")
        return value

    @model_validator(mode="after")
    def _unique(self) -> HubConfig:
        _no_repeats("group id", [group.id for group in self.groups])
        _no_repeats("bot name", [bot.name.casefold() for bot in self.bots])
        _no_repeats("bot token", [bot.token for bot in self.bots], show=False)
        if self.observer_queue_max > self.bot_queue_max:
            raise ValueError("observer_queue_max must not exceed bot_queue_max (a chat.send "
                             "must still fit once observing is shed)")
        for version in self.deprecations:
            if not 1 <= version <= CURRENT_PROTOCOL_VERSION:
                raise ValueError(f"deprecations: no protocol version {version}")
        return self

    @property
    def host(self) -> str:
        return parse_listen(self.listen)[0]

    @property
    def port(self) -> int:
        return parse_listen(self.listen)[1]

    @property
    def sweep_interval(self) -> float:
        if self.sweep_interval_seconds is not None:
            return self.sweep_interval_seconds
        return max(0.01, min(self.bot_ttl_seconds, self.link_ttl_seconds) / 4)


def _no_repeats(what: str, values: list[str], *, show: bool = True) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{what} {value!r} appears twice" if show else f"a {what} repeats")
        seen.add(value)
