"""The adapter's pure parts: config, names, mentions, error mapping, redaction, records."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import discord
import pytest
from discord_support import TOKEN
from pydantic import ValidationError

from adapters.discord import DiscordAccountConfig, DiscordAdapter
from adapters.discord.commands import InteractionRecord
from adapters.discord.errors import send_error, start_error
from adapters.discord.invite import application_id
from adapters.discord.outbound import (
    MAX_TEXT,
    allowed_mentions,
    mentioned_user_ids,
    webhook_username,
    with_prefix,
)
from adapters.discord.redaction import BOT_TOKEN, REDACTED, URL_TOKEN
from bridge.config import load_section
from bridge.core.adapter import PermanentSendError, TransientSendError
from bridge.core.binding import Binding
from bridge.logs import SecretRedactor
from bridge.text.prefix import PREFIX_ALLOWANCE


def test_config_defaults_point_at_discord_and_hide_the_token() -> None:
    config = DiscordAccountConfig(token=TOKEN)

    assert config.api_base_url == "https://discord.com/api/v10"
    assert config.gateway_url == "wss://gateway.discord.gg"
    assert (config.shard_ids, config.shard_count, config.members_intent) == (None, None, False)
    assert config.max_ratelimit_timeout == 30 and config.backfill_limit == 100
    assert TOKEN not in repr(config) and TOKEN not in str(config.model_dump())


def test_urls_lose_trailing_slashes() -> None:
    config = DiscordAccountConfig(token=TOKEN, api_base_url="http://proxy:8080/api/v10/",
                                  gateway_url="ws://proxy:8081/")

    assert config.api_base_url == "http://proxy:8080/api/v10"
    assert config.gateway_url == "ws://proxy:8081"


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({}, "token"),
        ({"token": TOKEN, "api_base_url": "discord.com/api"}, "http"),
        ({"token": TOKEN, "gateway_url": "https://gateway.discord.gg"}, "ws://"),
        ({"token": TOKEN, "shard_ids": [0]}, "needs shard_count"),
        ({"token": TOKEN, "shard_ids": [0, 4], "shard_count": 4}, r"outside 0\.\.3"),
        ({"token": TOKEN, "shard_ids": [1, 1], "shard_count": 2}, "twice"),
        ({"token": TOKEN, "shard_ids": [], "shard_count": 2}, "empty"),
        ({"token": TOKEN, "shard_count": 0}, "shard_count"),
        ({"token": TOKEN, "max_ratelimit_timeout": 5}, "max_ratelimit_timeout"),
        ({"token": TOKEN, "backfill_limit": -1}, "backfill_limit"),
        ({"token": TOKEN, "application_id": "my-app"}, "numeric"),
        ({"token": TOKEN, "avatar_urls": {"Echo": "echo.png"}}, "Echo"),
        ({"token": TOKEN, "tokn": "typo"}, "tokn"),
    ],
)
def test_config_errors(settings: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        DiscordAccountConfig.model_validate(settings)


def test_token_file_through_the_config_loader(tmp_path: Path) -> None:
    (tmp_path / "discord-token").write_text(TOKEN + "\n")
    (tmp_path / "bridge.yaml").write_text("discord:\n  token_file: discord-token\n")

    config = load_section(tmp_path / "bridge.yaml", "discord", DiscordAccountConfig)

    assert config.token.get_secret_value() == TOKEN


def test_avatars_are_found_by_bot_name_in_any_case() -> None:
    config = DiscordAccountConfig(token=TOKEN, avatar_urls={"Echo": "https://x.example/e.png"})

    assert config.avatar_for("echo") == "https://x.example/e.png"
    assert config.avatar_for("Rules") is None


@pytest.mark.parametrize(
    ("label", "name"),
    [
        ("Mantis", "Mantis"),
        ("DISCORD bot", "DISC\u041eRD bot"),
        ("Clyde", "Clyd\u0435"),
        ("a\tb\n c", "a b c"),
        ("   ", "bot"),
        ("é" * 81, "é" * 79 + "…"),
    ],
)
def test_webhook_usernames(label: str, name: str) -> None:
    assert webhook_username(label) == name
    assert 1 <= len(webhook_username(label)) <= 80
    assert "discord" not in webhook_username(label).casefold()


def test_mentioned_users_are_the_rendered_user_mentions_once_each() -> None:
    text = "hi <@1> and <@!2>, <@1> again; not <@&3>, not <#4>"

    assert mentioned_user_ids(text) == [1, 2]


def test_allowed_mentions_forbid_everyone_and_roles_by_default() -> None:
    quiet = Binding(channel="discord:main", chat="1", group="g")
    loud = Binding(channel="discord:main", chat="1", group="g", allow_everyone=True)

    assert allowed_mentions("<@7> hi", quiet).to_dict() == {"parse": [], "users": [7]}
    assert sorted(allowed_mentions("hi", loud).to_dict()["parse"]) == ["everyone", "roles"]


def test_the_name_prefix_always_fits_in_discords_limit() -> None:
    assert MAX_TEXT == 2000 - PREFIX_ALLOWANCE
    longest = with_prefix("*" * 200, "x" * MAX_TEXT)
    assert len(longest) <= 2000 and longest.startswith("**")


def test_send_errors_outside_http_are_classified() -> None:
    limited = send_error(discord.RateLimited(41.5), "send")
    dropped = send_error(aiohttp.ServerDisconnectedError(), "send")
    slow = send_error(TimeoutError(), "send")
    odd = send_error(ValueError("what"), "send")

    assert isinstance(limited, TransientSendError) and limited.retry_after == 41.5
    assert isinstance(dropped, TransientSendError) and isinstance(slow, TransientSendError)
    assert isinstance(odd, PermanentSendError)


def test_start_errors_say_what_to_fix() -> None:
    intents = start_error(discord.PrivilegedIntentsRequired(None), "main", members=True,
                          where="the gateway")
    token = start_error(discord.LoginFailure("Improper token has been passed."), "main",
                        members=False, where="Discord")

    assert "Message Content Intent and Server Members Intent" in str(intents)
    assert "accounts.discord.main.token" in str(token)


def test_the_redactor_knows_discord_tokens_and_url_tokens() -> None:
    redactor = SecretRedactor()
    redactor.add_pattern(BOT_TOKEN)
    redactor.add_pattern(URL_TOKEN)
    hook = "x" * 68
    record = logging.LogRecord(
        "discord.webhook.async_", logging.DEBUG, __file__, 1, "%s %s with %s",
        ("POST", f"https://discord.com/api/v10/webhooks/123/{hook}?wait=1", TOKEN), None,
    )

    redactor.filter(record)

    expected = f"POST https://discord.com/api/v10/webhooks/123/{REDACTED}?wait=1 with {REDACTED}"
    assert record.getMessage() == expected


def test_the_application_id_comes_from_the_token_unless_configured() -> None:
    assert application_id(DiscordAccountConfig(token=TOKEN)) == "123456789012345678"
    assert application_id(DiscordAccountConfig(token="garbage!")) is None
    configured = DiscordAccountConfig(token="garbage!", application_id="42")
    assert application_id(configured) == "42"


def test_an_interaction_is_answered_directly_only_while_its_token_lasts() -> None:
    created = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    record = InteractionRecord(str(discord.utils.time_snowflake(created)), "t" * 80, "1",
                               ephemeral=True, channel_id="2")

    assert record.usable(created + timedelta(minutes=14))
    assert not record.usable(created + timedelta(minutes=15))
    assert InteractionRecord.from_record(record.to_record()) == record
    assert InteractionRecord.from_record({"id": "1"}) is None


def test_capabilities_stream_by_edits_and_delete_leftovers() -> None:
    capabilities = DiscordAdapter.capabilities

    assert capabilities.dialect == "discord" and capabilities.max_length == MAX_TEXT
    assert capabilities.can_edit and capabilities.can_delete and capabilities.custom_sender
    assert capabilities.threads and capabilities.min_edit_interval == 1.5
