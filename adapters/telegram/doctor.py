"""`bcn-bridge doctor` for a Telegram account: is the token accepted, and will it see messages?

Asks the Bot API what `start()` would (getMe, and getWebhookInfo in polling mode) without
polling or registering anything, so it is safe beside a running bridge.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager

from telegram import Bot
from telegram.error import InvalidToken, TelegramError
from telegram.request import HTTPXRequest

from adapters.telegram.config import TelegramAccountConfig
from adapters.telegram.redaction import protect_tokens, redact
from adapters.telegram.startup import privacy_warning
from bridge.core.adapter import Diagnosis


async def diagnose(account: str, config: TelegramAccountConfig) -> list[Diagnosis]:
    channel = f"telegram:{account}"
    protect_tokens(config.token.get_secret_value())
    request = HTTPXRequest(connect_timeout=config.connect_timeout,
                           read_timeout=config.read_timeout)
    bot = Bot(config.token.get_secret_value(), base_url=config.bot_api_url,
              base_file_url=config.bot_file_url, request=request)
    failure: Diagnosis | None = None
    try:
        with _quiet(PTB_REQUEST_LOGGER):  # it logs a non-JSON answer whole, with a traceback
            await bot.initialize()
    except TelegramError as exc:
        failure = _login_failure(exc, channel, account, config.api_base_url)
    if failure is not None:
        await request.shutdown()
        return [failure]
    try:
        found = [Diagnosis.ok(f"{channel}: logged in as @{bot.username} (id {bot.id})")]
        if warning := privacy_warning(bot, account):
            found.append(Diagnosis.warn(f"{channel}: privacy mode is on", warning))
        if config.mode == "polling":
            found.append(await _webhook_check(bot, account))
        return found
    finally:
        await bot.shutdown()


PTB_REQUEST_LOGGER = "telegram.request.BaseRequest"
"""python-telegram-bot's request logger, which logs an answer that is not JSON whole."""
_STATUS = re.compile(r"\((\d{3})\)")


def _login_failure(exc: TelegramError, channel: str, account: str, api: str) -> Diagnosis:
    """Why getMe failed, told apart: an answer that is not the Bot API's JSON (a wrong
    api_base_url, a proxy's error page) is not a rejected token, whatever its status."""
    said = [str(each) for each in _chain(exc)]
    if any(_NOT_JSON in text for text in said):  # PTB could not read the answer as JSON
        status = next((found for text in said if (found := _STATUS.search(text))), None)
        answered = f"HTTP {status.group(1)}" if status else "something"
        return Diagnosis.fail(
            f"{channel}: {api} answered {answered} with a page that is not the Bot API's "
            "(not its JSON), so the token was never checked",
            f"check accounts.telegram.{account}.api_base_url: it must be the Bot API server's "
            "root (https://api.telegram.org, or your own Bot API server)",
        )
    if isinstance(exc, InvalidToken):
        return Diagnosis.fail(
            f"{channel}: the Bot API rejected the bot token",
            f"check accounts.telegram.{account}.token (BotFather's /token shows it)",
        )
    return Diagnosis.fail(
        f"{channel}: cannot reach the Bot API at {api} "
        f"({redact(f'{type(exc).__name__}: {exc}')})",
        f"check the network and any HTTPS proxy, or accounts.telegram.{account}.api_base_url",
    )


_NOT_JSON = "Parsing the server response"
"""What python-telegram-bot adds to an error whose answer was not JSON."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The error and the ones it was raised from (PTB wraps getMe's in its own)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


@contextmanager
def _quiet(logger_name: str) -> Iterator[None]:
    """Keep a library logger silent for a probe whose failure is reported anyway."""
    logger = logging.getLogger(logger_name)
    was = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was


async def _webhook_check(bot: Bot, account: str) -> Diagnosis:
    """Polling fails with 409 while a webhook is set for the token."""
    channel = f"telegram:{account}"
    try:
        info = await bot.get_webhook_info()
    except TelegramError as exc:
        return Diagnosis.warn(f"{channel}: could not ask for the webhook ({redact(str(exc))})")
    except (AttributeError, TypeError, ValueError, KeyError) as exc:
        # PTB reads `result` as a WebhookInfo object without checking it is one: `true`, a
        # list or an object without its fields (a proxy's answer) fail inside its parser.
        return Diagnosis.fail(
            f"{channel}: the Bot API answered getWebhookInfo with something that is not a "
            f"webhook description ({type(exc).__name__}), so polling may not work",
            f"check that accounts.telegram.{account}.api_base_url points at the Bot API "
            "itself, not at something in between that rewrites its answers",
        )
    if info.url:
        return Diagnosis.fail(
            f"{channel}: a webhook is set for this bot ({info.url}), so polling gets 409",
            "set mode: webhook for this account, or remove the webhook (Bot API deleteWebhook)",
        )
    return Diagnosis.ok(f"{channel}: no webhook set; long polling can run")
