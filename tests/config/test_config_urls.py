"""The one http(s) URL check every account config uses (`bridge.config.urls`): what it
accepts, how it normalizes, and errors that name the key and what was expected."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, field_validator

from bridge.config import ConfigError, load_section
from bridge.config.urls import EXPECTED, http_api_root, http_url, is_http_url


class Account(BaseModel):
    model_config = ConfigDict(extra="forbid")

    api_base_url: str = "https://api.example.org"
    public_url: str | None = None
    sdk_root: str = "https://sdk.example.org/api/"

    _urls = field_validator("api_base_url", "public_url")(http_url)
    _root = field_validator("sdk_root")(http_api_root)


@pytest.mark.parametrize("value", ["http://127.0.0.1:8080", "https://x.example/api",
                                   "HTTPS://X.EXAMPLE"])
def test_http_and_https_urls_with_a_host_pass(value: str) -> None:
    assert is_http_url(value)


@pytest.mark.parametrize("value", ["ftp://x.example", "x.example", "http://", "https:/x",
                                   "", "ws://x.example"])
def test_anything_else_is_refused(value: str) -> None:
    assert not is_http_url(value)
    with pytest.raises(ValueError, match=EXPECTED):
        http_url(value)


def test_trailing_slashes_are_normalized() -> None:
    assert http_url("https://x.example/bot/") == "https://x.example/bot"
    assert http_url(None) is None
    assert http_api_root("https://x.example/api") == "https://x.example/api/"
    assert http_api_root("https://x.example/api//") == "https://x.example/api/"


def test_a_config_error_names_the_key_and_what_was_expected(write_config) -> None:
    path = write_config("""
        s:
          api_base_url: ftp://files.example.org
          public_url: https://ok.example.org/
          sdk_root: "not a url"
    """)
    with pytest.raises(ConfigError) as caught:
        load_section(path, "s", Account, environ={})
    found = {issue.path: issue.message for issue in caught.value.issues}
    assert found == {"s.api_base_url": EXPECTED, "s.sdk_root": EXPECTED}
    assert "files.example.org" not in str(caught.value)  # a URL may hold a token


def test_every_platform_config_uses_it() -> None:
    """The three platforms that had their own copy now refuse the same way."""
    from adapters.discord.config import DiscordAccountConfig
    from adapters.slack.config import SlackAccountConfig
    from adapters.telegram.config import TelegramAccountConfig

    cases = [
        (DiscordAccountConfig, {"token": "a.b.c", "api_base_url": "discord.com"}),
        (TelegramAccountConfig, {"token": "1:x", "public_url": "example.org"}),
        (SlackAccountConfig, {"bot_token": "xoxb-1", "app_token": "xapp-1",
                              "api_base_url": "slack.com/api"}),
    ]
    for model, data in cases:
        with pytest.raises(ValueError, match=EXPECTED):
            model.model_validate(data)
