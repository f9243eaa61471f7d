"""BCN bots that have their own Telegram bot account, so they post under their own name.

Each puppet is a plain python-telegram-bot `Bot` on the same Bot API server as the main
account. Puppets only post; the main account receives. A puppet whose token does not work
is logged and left out, so its replies still arrive, through the main bot with a prefix.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from pydantic import SecretStr
from telegram import Bot
from telegram.error import TelegramError
from telegram.request import HTTPXRequest

from adapters.telegram.redaction import redact

log = logging.getLogger(__name__)


class PuppetBots:
    """The puppet accounts of one Telegram account, keyed by BCN bot name (case-insensitive)."""

    def __init__(
        self,
        account: str,
        tokens: Mapping[str, SecretStr],
        *,
        base_url: str,
        base_file_url: str,
        connect_timeout: float,
        read_timeout: float,
    ) -> None:
        self.account = account
        self._pending = {
            name: Bot(
                token.get_secret_value(),
                base_url=base_url,
                base_file_url=base_file_url,
                request=HTTPXRequest(connect_timeout=connect_timeout, read_timeout=read_timeout),
            )
            for name, token in tokens.items()
        }
        self._bots: dict[str, Bot] = {}

    async def start(self) -> None:
        """Ask each puppet who it is (`getMe`); keep the ones that answer."""
        for name, bot in self._pending.items():
            try:
                await bot.initialize()
            except TelegramError as exc:
                log.error(
                    "telegram:%s puppet for %r cannot log in (%s); its replies will be sent "
                    "by the main bot with a name prefix",
                    self.account,
                    name,
                    redact(str(exc)),
                )
                await bot.shutdown()
                continue
            self._bots[name.casefold()] = bot
            log.info("telegram:%s %r posts as @%s", self.account, name, bot.username)

    async def stop(self) -> None:
        bots, self._bots = list(self._bots.values()), {}
        for bot in bots:
            await bot.shutdown()

    def for_label(self, label: str) -> Bot | None:
        return self._bots.get(label.casefold())

    @property
    def ids(self) -> frozenset[int]:
        """Telegram user ids of the puppets, to recognise their messages as own echoes."""
        return frozenset(bot.id for bot in self._bots.values())
