"""A channel type for config tests, registered in `bridge.core.registry.ADAPTERS`.

The config only needs an adapter's `config_model`, so this is all a test adapter has.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class TestChatAccount(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    token: SecretStr
    mode: str = Field("polling", pattern="^(polling|webhook)$")
    retries: int = Field(3, ge=0)


class TestChatAdapter:
    channel_type: ClassVar[str] = "testchat"
    config_model: ClassVar[type[BaseModel]] = TestChatAccount


class KeepsFileAccount(BaseModel):
    """Declares `token_file` itself: the loader must leave it alone."""

    model_config = ConfigDict(extra="forbid")

    token_file: str


class KeepsFileAdapter:
    channel_type: ClassVar[str] = "keepsfile"
    config_model: ClassVar[type[BaseModel]] = KeepsFileAccount
