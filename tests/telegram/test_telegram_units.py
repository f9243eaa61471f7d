"""The adapter's pure parts: config validation, command addressing, names, error mapping."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pydantic import ValidationError
from telegram.error import BadRequest, ChatMigrated, Forbidden, NetworkError, RetryAfter, TimedOut
from telegram_support import TOKEN

from adapters.telegram import TelegramAccountConfig
from adapters.telegram.commands import address_command
from adapters.telegram.errors import send_error
from adapters.telegram.outbound import visible_text, with_prefix
from adapters.telegram.redaction import BOT_TOKEN, REDACTED
from bridge.config import load_config, load_section
from bridge.core.adapter import PermanentSendError, TransientSendError
from bridge.logs import SecretRedactor


def test_config_defaults_to_polling_against_telegram() -> None:
    config = TelegramAccountConfig(token=TOKEN)

    assert config.mode == "polling"
    assert config.bot_api_url == "https://api.telegram.org/bot"
    assert config.bot_file_url == "https://api.telegram.org/file/bot"
    assert TOKEN not in repr(config) and TOKEN not in str(config.model_dump())


def test_self_hosted_server_urls() -> None:
    config = TelegramAccountConfig(
        token=TOKEN, api_base_url="http://tg-api:8081/", file_base_url="http://files:8082"
    )

    assert config.bot_api_url == "http://tg-api:8081/bot"
    assert config.bot_file_url == "http://files:8082/file/bot"


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({}, "token"),
        ({"token": TOKEN, "mode": "webhook"}, "public_url and secret_token"),
        ({"token": TOKEN, "mode": "webhook", "public_url": "https://x"}, "secret_token"),
        ({"token": TOKEN, "secret_token": "has spaces"}, "secret_token"),
        ({"token": TOKEN, "api_base_url": "api.telegram.org"}, "http"),
        ({"token": TOKEN, "path": "no-slash"}, "path"),
        ({"token": TOKEN, "tokn": "typo"}, "tokn"),
    ],
)
def test_config_errors(settings: dict[str, str], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        TelegramAccountConfig.model_validate(settings)


def test_webhook_url_never_contains_the_token() -> None:
    config = TelegramAccountConfig(
        token=TOKEN, mode="webhook", public_url="https://bridge.example/", secret_token="abc"
    )

    assert config.webhook_url("main") == "https://bridge.example/telegram/main"
    assert config.secret_token is not None and "abc" not in repr(config)


def test_token_file_through_the_config_loader(tmp_path: Path) -> None:
    (tmp_path / "tg-token").write_text(TOKEN + "\n")
    (tmp_path / "bridge.yaml").write_text("telegram:\n  token_file: tg-token\n")

    config = load_section(tmp_path / "bridge.yaml", "telegram", TelegramAccountConfig)

    assert config.token.get_secret_value() == TOKEN


def bot_command(length: int) -> dict[str, object]:
    return {"type": "bot_command", "offset": 0, "length": length}


def test_command_for_this_bot_loses_its_address_and_entities_shift() -> None:
    text = "/ask@BridgeBot @Mantis go"
    entities = [bot_command(14), {"type": "mention", "offset": 15, "length": 7}]

    addressed = address_command(text, entities, "bridgebot")

    assert addressed is not None
    assert addressed.text == "/ask @Mantis go"
    assert addressed.entities == [bot_command(4), {"type": "mention", "offset": 5, "length": 7}]


def test_command_for_another_bot_is_not_ours() -> None:
    assert address_command("/stop@OtherBot", [bot_command(14)], "BridgeBot") is None


@pytest.mark.parametrize("text", ["/new", "plain text", "/ask Mantis do it"])
def test_unaddressed_text_is_unchanged(text: str) -> None:
    entities = [bot_command(len(text.split()[0]))] if text.startswith("/") else []

    addressed = address_command(text, entities, "BridgeBot")

    assert addressed is not None and addressed.text == text


def test_prefix_is_escaped_html() -> None:
    assert with_prefix("A<b>&", "x") == "<b>A&lt;b&gt;&amp;</b>\nx"
    assert with_prefix("", "x") == "x"


def test_visible_text_is_what_a_reader_sees() -> None:
    assert visible_text("<b>a &amp; b</b> &lt; c") == "a & b < c"
    assert visible_text("x <b>unclosed") == "x unclosed"


@pytest.mark.parametrize(
    ("error", "kind", "retry_after"),
    [
        (RetryAfter(12), TransientSendError, 12.0),
        (TimedOut(), TransientSendError, None),
        (NetworkError("Bad Gateway"), TransientSendError, None),
        (Forbidden("Forbidden: bot was kicked from the group chat"), PermanentSendError, None),
        (BadRequest("Chat not found"), PermanentSendError, None),
        (ChatMigrated(-100777), PermanentSendError, None),
    ],
)
def test_send_errors(error: Exception, kind: type, retry_after: float | None) -> None:
    mapped = send_error(error, "sendMessage")  # type: ignore[arg-type]

    assert type(mapped) is kind
    assert mapped.retry_after == retry_after


def test_migrated_group_names_the_new_chat_id() -> None:
    assert "-100777" in str(send_error(ChatMigrated(-100777), "sendMessage"))


def test_redactor_hides_known_and_token_shaped_secrets() -> None:
    redactor = SecretRedactor()
    redactor.add(["webhook-secret"])
    redactor.add_pattern(BOT_TOKEN)
    record = logging.LogRecord(
        "httpx", logging.INFO, __file__, 1, "POST %s with %s",
        (f"https://api.telegram.org/bot{TOKEN}/getMe", "webhook-secret"), None,
    )  # fmt: skip

    redactor.filter(record)

    expected = f"POST https://api.telegram.org/bot{REDACTED}/getMe with {REDACTED}"
    assert record.getMessage() == expected


def test_the_shipped_example_config_is_valid() -> None:
    example = Path(__file__).parents[2] / "config" / "telegram.example.yaml"

    config = load_config(example, environ={"TELEGRAM_BOT_TOKEN": TOKEN})

    account = config.account("telegram:main")
    assert isinstance(account, TelegramAccountConfig)
    assert account.token.get_secret_value() == TOKEN
