"""Checks and registrations done once when a Telegram account starts.

Privacy mode is the most common reason a Telegram bridge "does nothing" in a group, so the
adapter says so at start, with the fix, instead of leaving people to guess.
"""

from __future__ import annotations

import logging

from telegram import Bot
from telegram.error import TelegramError

from adapters.telegram.commands import bridge_commands
from adapters.telegram.redaction import redact
from bridge.config.sections import CommandNames

log = logging.getLogger(__name__)


def privacy_warning(bot: Bot, account: str) -> str | None:
    """The warning to show when privacy mode hides group messages from the bot, else None."""
    if bot.can_read_all_group_messages:
        return None
    return (
        f"telegram:{account} bot @{bot.username} has privacy mode on: in groups it only sees "
        "commands, replies to its own messages and @mentions of it, so most human messages "
        "will not reach the bots. Fix: in Telegram, open @BotFather, send /setprivacy, choose "
        f"@{bot.username} and pick Disable (then remove and re-add the bot to each group), "
        "or make the bot an admin of the group."
    )


async def register_commands(
    bot: Bot, account: str, names: CommandNames | None = None
) -> None:
    """`setMyCommands`, so Telegram offers /ask, /requests, /stop and /new in its menu.

    A failure here costs only the menu, so it is logged and start goes on.
    """
    try:
        await bot.set_my_commands(bridge_commands(names))
    except TelegramError as exc:
        log.warning(
            "telegram:%s could not register its commands: %s", account, redact(str(exc))
        )
