"""`web.dashboard`: the operator's dashboard, declared next to the code that serves it.

Off unless configured: it shows every chat's bots and requests and can cancel and pause
them, so it needs its own secret. The token is a `SecretStr` (never in a dump, a repr or a
log line); `token_file:` works through the config loader's `*_file` convention.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

MIN_TOKEN_CHARS = 16


class DashboardSection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(False, description="Serve the dashboard at /dashboard.")
    token: SecretStr | None = Field(
        None,
        description=f"What an operator types to sign in (or token_file); at least "
        f"{MIN_TOKEN_CHARS} characters, e.g. `openssl rand -hex 24`.",
    )
    session_hours: float = Field(
        12.0, gt=0, le=24 * 30,
        description="How long a sign-in lasts before the token is asked for again.",
    )
    secure_cookie: bool | None = Field(
        None,
        description="Mark the session cookie Secure (HTTPS only); unset: when the request came "
        "over HTTPS (X-Forwarded-Proto from a proxy counts).",
    )

    @field_validator("token")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < MIN_TOKEN_CHARS:
            raise ValueError(
                f"expected at least {MIN_TOKEN_CHARS} characters (e.g. `openssl rand -hex 24`)"
            )
        return value

    @model_validator(mode="after")
    def _token_when_enabled(self) -> DashboardSection:
        if self.enabled and self.token is None:
            raise ValueError(
                "the dashboard is enabled but has no token: set web.dashboard.token "
                "(e.g. ${BCN_DASHBOARD_TOKEN}) or web.dashboard.token_file"
            )
        return self
