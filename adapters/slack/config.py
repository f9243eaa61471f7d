"""The Slack account config, declared next to the adapter that reads it.

Secrets (`bot_token`, `app_token`, `signing_secret`) are `SecretStr` so that a config dump, a
repr or a validation error never shows them; `bot_token_file:` and the like work through the
config loader's `*_file` convention. Each mode asks only for what it uses: Socket Mode needs
the app-level token, HTTP mode the signing secret; the other one may stay unset.
"""

from __future__ import annotations

from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from adapters.slack.manifest import interactivity_path_for
from bridge.config.limits import SendLimit
from bridge.config.urls import http_api_root, is_http_url
from bridge.web.server import check_route_path

SLACK_API = "https://slack.com/api/"

TOKEN_SHAPES = {
    "bot_token": ("xoxb-", "a bot token starting with xoxb- (OAuth & Permissions → Bot User "
                  "OAuth Token)"),
    "app_token": ("xapp-", "an app-level token starting with xapp- (Basic Information → "
                  "App-Level Tokens, scope connections:write)"),
}
"""Each token's prefix, and where in the app's settings to find the right one."""

EDITS_PER_MINUTE = 50
"""`chat.update` is a Tier 3 method: about 50 calls a minute per workspace."""


class SlackSendLimits(BaseModel):
    """Slack's published limit for posting (api.slack.com/apis/rate-limits), paced before
    each call into a channel."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    channel: SendLimit = Field(SendLimit(count=1, seconds=1),
                               description="Messages (posts and edits) into one channel.")


class SlackAccountConfig(BaseModel):
    """One Slack app installed in one workspace: its tokens and how events reach the bridge."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bot_token: SecretStr = Field(
        description="The Bot User OAuth Token (xoxb-…), or use bot_token_file."
    )
    mode: Literal["socket", "http"] = Field(
        "socket", description="socket: Socket Mode (no public URL); http: the Events API."
    )
    app_token: SecretStr | None = Field(
        None,
        description="Socket mode: an app-level token (xapp-…) with connections:write.",
    )
    signing_secret: SecretStr | None = Field(
        None, description="HTTP mode: the app's Signing Secret, checked on every request."
    )
    path: str | None = Field(
        None,
        description='HTTP mode: route on the bridge web server; "/slack/<account>/events".',
    )
    api_base_url: str = Field(
        SLACK_API,
        description="Web API root (Socket Mode's apps.connections.open goes through it too).",
    )
    icons: dict[str, str] = Field(
        default_factory=dict,
        description="BCN bot name -> its icon: an image URL or an :emoji: (needs "
        "chat:write.customize).",
    )
    edits_per_minute: int = Field(
        EDITS_PER_MINUTE,
        ge=1,
        description="chat.update calls per minute for the whole workspace while replies stream.",
    )
    connect_timeout: float = Field(
        30.0, gt=0, description="Seconds start() waits for the first Socket Mode connection."
    )
    ping_interval: float = Field(
        10.0, gt=0, description="Socket mode: seconds between WebSocket pings (reconnect checks)."
    )
    request_timeout: int = Field(30, ge=1, description="Seconds per Web API call.")
    name_cache_seconds: float = Field(
        3600.0, ge=0, description="How long user and channel names are kept before a refresh."
    )
    send_limits: SlackSendLimits = Field(
        default_factory=SlackSendLimits,
        description="Posts and edits are paced under these, shared by every instance.",
    )

    @field_validator("bot_token", "app_token")
    @classmethod
    def _token_shape(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        prefix, what = TOKEN_SHAPES[str(info.field_name)]
        if value is not None and not value.get_secret_value().startswith(prefix):
            raise ValueError(f"expected {what}")
        return value

    @field_validator("signing_secret")
    @classmethod
    def _secret_not_blank(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            raise ValueError("the signing secret is empty")
        return value

    # slack_sdk appends method names directly ("…/api/" + "chat.postMessage").
    _api_root = field_validator("api_base_url")(http_api_root)

    _route_path = field_validator("path")(check_route_path)

    @field_validator("icons")
    @classmethod
    def _icon_shape(cls, value: dict[str, str]) -> dict[str, str]:
        for name, icon in value.items():
            if not (is_http_url(icon) or is_emoji(icon)):
                raise ValueError(
                    f"icon of {name!r} must be an http(s) image URL or an :emoji: name"
                )
        return value

    @model_validator(mode="after")
    def _mode_needs_its_secret(self) -> SlackAccountConfig:
        if self.mode == "socket" and self.app_token is None:
            raise ValueError(
                "socket mode needs app_token (an app-level token xapp-… with the "
                "connections:write scope), or set mode: http"
            )
        if self.mode == "http" and self.signing_secret is None:
            raise ValueError(
                "http mode needs signing_secret (Basic Information → App Credentials), "
                "or set mode: socket"
            )
        return self

    def events_path(self, account: str) -> str:
        """The route Slack posts events and slash commands to in HTTP mode."""
        return self.path or f"/slack/{account}/events"

    def interactivity_path(self, account: str) -> str:
        """The route Slack posts button presses and modal submissions to in HTTP mode (the
        events route takes them too: both are signed the same and read by one Bolt app)."""
        return interactivity_path_for(self.events_path(account))

    def icon_for(self, label: str) -> dict[str, str]:
        """`icon_url` or `icon_emoji` for a bot's posts; empty for the app's own icon."""
        wanted = label.casefold()
        for name, icon in self.icons.items():
            if name.casefold() == wanted:
                return {"icon_emoji": icon} if is_emoji(icon) else {"icon_url": icon}
        return {}


def is_emoji(icon: str) -> bool:
    return len(icon) > 2 and icon.startswith(":") and icon.endswith(":")
