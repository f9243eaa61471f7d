"""The Matrix account config, declared next to the adapter that reads it.

The bridge is an application service: the homeserver pushes every event of the rooms its
users are in to `listen`, and the bridge calls the client-server API with `as_token`. The
two tokens are `SecretStr` (never shown by a dump, a repr or a validation error);
`as_token_file:` / `hs_token_file:` work through the config loader's `*_file` convention.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from bridge.config.urls import http_url

_LOCALPART = re.compile(r"^[a-z0-9._=/+-]+$")
"""The characters Matrix allows in a user id's localpart."""


class MatrixAccountConfig(BaseModel):
    """One application service on one homeserver."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    homeserver: str = Field(description="The client-server API base URL, e.g. http://127.0.0.1:8008.")
    server_name: str = Field(description="The homeserver's domain: user ids end in :server_name.")
    as_token: SecretStr = Field(description="The registration's as_token (or as_token_file).")
    hs_token: SecretStr = Field(description="The registration's hs_token (or hs_token_file).")
    listen: str = Field("127.0.0.1:29333",
                        description="HOST:PORT where the homeserver pushes transactions.")
    url: str | None = Field(
        None, description="How the homeserver reaches `listen` (the registration's url); "
        "http://<listen> when unset. Behind a load balancer: its URL.")
    appservice_id: str = Field("bcn-bridge", description="The registration's id.")
    bot_localpart: str = Field("bcn_bridge", description="The bridge's own user, "
                               "@<bot_localpart>:server_name; invite it to a room.")
    puppet_prefix: str = Field("bcn_", description="Each BCN bot appears as "
                               "@<puppet_prefix><name>:server_name.")
    request_timeout: float = Field(15.0, gt=0, description="Seconds for one API call.")

    _urls = field_validator("homeserver", "url")(http_url)

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        from bridge.listen import parse_listen

        parse_listen(value)
        return value

    @field_validator("bot_localpart", "puppet_prefix")
    @classmethod
    def _localpart(cls, value: str) -> str:
        if not _LOCALPART.match(value):
            raise ValueError("use lowercase letters, digits and . _ = - / + only")
        return value

    @property
    def bot_user_id(self) -> str:
        return f"@{self.bot_localpart}:{self.server_name}"

    @property
    def push_url(self) -> str:
        """The URL the homeserver pushes transactions to."""
        if self.url:
            return self.url
        from bridge.listen import parse_listen

        host, port = parse_listen(self.listen)
        host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        return f"http://{host}:{port}"
