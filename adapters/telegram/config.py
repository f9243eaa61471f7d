"""The Telegram account config, declared next to the adapter that reads it.

Secrets (`token`, `secret_token`, puppet tokens) are `SecretStr` so that a config dump,
a repr or a validation error never shows them. `token_file:` / `secret_token_file:` work
through the config loader's `*_file` convention, which reads the file into `token`.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from bridge.config.limits import SendLimit
from bridge.config.urls import http_url
from bridge.web.server import check_route_path

TELEGRAM_API = "https://api.telegram.org"

_SECRET_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
"""What Telegram accepts as a webhook secret token."""


class TelegramSendLimits(BaseModel):
    """The Bot API's published limits (core.telegram.org/bots/faq), paced before sending."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    group: SendLimit = Field(SendLimit(count=20, seconds=60),
                             description="Messages a bot may send into one group.")
    chat: SendLimit = Field(SendLimit(count=1, seconds=1),
                            description="Messages into any one chat (private, group, channel).")
    bot: SendLimit = Field(SendLimit(count=30, seconds=1),
                           description="Messages of the whole bot, every chat together.")


class TelegramAccountConfig(BaseModel):
    """One Telegram bot account: how it connects, and which BCN bots post as themselves."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: SecretStr = Field(description="The bot token from BotFather (or use token_file).")
    mode: Literal["polling", "webhook"] = "polling"

    public_url: str | None = Field(
        None, description="Webhook mode: the bridge's public https base URL Telegram calls."
    )
    path: str | None = Field(
        None, description='Webhook mode: route on the bridge web server; "/telegram/<account>".'
    )
    secret_token: SecretStr | None = Field(
        None, description="Webhook mode: Telegram sends it with every update; required there."
    )

    api_base_url: str = Field(
        TELEGRAM_API, description="Bot API server root; set it for a self-hosted Bot API server."
    )
    file_base_url: str | None = Field(
        None, description="File download server root; the api_base_url when unset."
    )
    puppets: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="BCN bot name -> its own Telegram bot token, so that bot posts as itself.",
    )

    poll_timeout: float = Field(10.0, ge=0, description="Long-poll duration of getUpdates (s).")
    poll_interval: float = Field(0.0, ge=0, description="Pause between two getUpdates (s).")
    connect_timeout: float = Field(5.0, gt=0)
    read_timeout: float = Field(10.0, gt=0, description="For API calls other than getUpdates.")
    drop_pending_updates: bool = Field(
        False, description="Skip updates that queued up while the bridge was down."
    )
    send_limits: TelegramSendLimits = Field(
        default_factory=TelegramSendLimits,
        description="Sends and edits are paced under these, shared by every instance.",
    )

    @field_validator("secret_token")
    @classmethod
    def _telegram_accepts_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not _SECRET_TOKEN.match(value.get_secret_value()):
            raise ValueError("secret_token must be 1-256 characters of A-Z, a-z, 0-9, _ and -")
        return value

    _http_url = field_validator("api_base_url", "file_base_url", "public_url")(http_url)

    _route_path = field_validator("path")(check_route_path)

    @model_validator(mode="after")
    def _webhook_needs_url_and_secret(self) -> TelegramAccountConfig:
        if self.mode == "webhook":
            missing = [
                name for name in ("public_url", "secret_token") if getattr(self, name) is None
            ]
            if missing:
                raise ValueError(f"webhook mode needs {' and '.join(missing)}")
        return self

    def webhook_path(self, account: str) -> str:
        """The route Telegram posts updates to; never derived from the token."""
        return self.path or f"/telegram/{account}"

    def webhook_url(self, account: str) -> str:
        if self.public_url is None:
            raise ValueError("webhook mode needs public_url")
        return self.public_url + self.webhook_path(account)

    @property
    def bot_api_url(self) -> str:
        """The base PTB appends `<token>/<method>` to."""
        return f"{self.api_base_url}/bot"

    @property
    def bot_file_url(self) -> str:
        return f"{self.file_base_url or self.api_base_url}/file/bot"
