"""The Discord account config, declared next to the adapter that reads it.

The bot token is a `SecretStr`, so a config dump, a repr or a validation error never shows
it; `token_file:` works through the config loader's `*_file` convention. `api_base_url` and
`gateway_url` exist for proxies and for the test fake: the same code runs against both.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from bridge.config.urls import EXPECTED, http_url, is_http_url

DISCORD_API = "https://discord.com/api/v10"
DISCORD_GATEWAY = "wss://gateway.discord.gg"

RATELIMIT_FLOOR = 30.0
"""discord.py never gives up on a 429 sooner than this (it raises the setting to 30 s)."""


class DiscordAccountConfig(BaseModel):
    """One Discord bot account: how it connects and how much it catches up after a restart."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: SecretStr = Field(description="The bot token from the developer portal (or token_file).")
    application_id: str | None = Field(
        None,
        description="The application (client) id, for `discord invite-url`; read from the "
        "token when unset.",
    )
    api_base_url: str = Field(
        DISCORD_API, description="REST root including the API version; for proxies and tests."
    )
    gateway_url: str = Field(
        DISCORD_GATEWAY,
        description="The gateway; when it is not Discord's own, resumes come back here too.",
    )
    shard_ids: list[int] | None = Field(
        None,
        description="The only shards this instance may run, e.g. [0, 1] (needs shard_count); "
        "without it, instances sharing a store split every shard between them by lease.",
    )
    shard_count: int | None = Field(
        None, ge=1, description="Total shards of the bot across all instances."
    )
    members_intent: bool = Field(
        False,
        description="Ask for the privileged Server Members intent (switch it on in the "
        "developer portal): every member is known, so a bot's @Name reaches people who "
        "have not spoken yet.",
    )
    backfill_limit: int = Field(
        100, ge=0, le=1000,
        description="After a restart, relay at most this many missed messages per channel "
        "(0: none).",
    )
    webhook_timeout: float = Field(
        15.0, gt=0,
        description="Seconds one webhook call may take, waits for its rate limits included.",
    )
    max_ratelimit_timeout: float = Field(
        RATELIMIT_FLOOR, ge=RATELIMIT_FLOOR,
        description="A 429 asking to wait longer than this (s) is handed to the outbox.",
    )
    identify_interval: float = Field(
        5.0, ge=0,
        description="Seconds between this instance's gateway IDENTIFYs when it opens several "
        "shards (Discord accepts one per 5 s for most bots).",
    )
    guild_ready_timeout: float = Field(
        2.0, gt=0, description="How long discord.py waits for servers after connecting (s)."
    )
    ready_timeout: float = Field(
        60.0, gt=0, description="How long start waits for the gateway to become ready (s)."
    )
    avatar_urls: dict[str, str] = Field(
        default_factory=dict, description="BCN bot name -> avatar image URL for its posts."
    )

    _http_url = field_validator("api_base_url")(http_url)

    @field_validator("gateway_url")
    @classmethod
    def _ws_url(cls, value: str) -> str:
        if not value.startswith(("ws://", "wss://")):
            raise ValueError("expected a ws:// or wss:// URL")
        return value.rstrip("/")

    @field_validator("application_id")
    @classmethod
    def _snowflake(cls, value: str | None) -> str | None:
        if value is not None and not value.isdigit():
            raise ValueError("expected the numeric application id")
        return value

    @field_validator("avatar_urls")
    @classmethod
    def _avatar_urls(cls, value: dict[str, str]) -> dict[str, str]:
        for name, url in value.items():
            if not is_http_url(url):
                raise ValueError(f"avatar for {name!r}: {EXPECTED}")
        return value

    @model_validator(mode="after")
    def _shards_fit(self) -> DiscordAccountConfig:
        if self.shard_ids is None:
            return self
        if self.shard_count is None:
            raise ValueError("shard_ids needs shard_count (the total number of shards)")
        if not self.shard_ids:
            raise ValueError("shard_ids is empty; leave it out to run every shard")
        if len(set(self.shard_ids)) != len(self.shard_ids):
            raise ValueError("shard_ids lists a shard twice")
        outside = [shard for shard in self.shard_ids if not 0 <= shard < self.shard_count]
        if outside:
            raise ValueError(
                f"shard_ids {outside} are outside 0..{self.shard_count - 1} (shard_count)"
            )
        return self

    def avatar_for(self, label: str) -> str | None:
        wanted = label.casefold()
        return next(
            (url for name, url in self.avatar_urls.items() if name.casefold() == wanted), None
        )
