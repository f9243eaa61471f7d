"""Chat commands as Telegram shows them, and `/cmd@Bot` addressing.

In a group with several bots, Telegram users pick a bot with `/ask@ThisBot`. The core only
knows `/ask`, so a command addressed to this bot is stripped of its address, and a command
addressed to another bot is none of this bridge's business.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from telegram import BotCommand

from bridge.config.sections import CommandNames

COMMAND_DESCRIPTIONS: dict[str, str] = {
    "ask": "Ask a bot to do something: /ask <Bot> <task>",
    "requests": "List the open bot requests in this chat",
    "stop": "Stop the bot reply that is running",
    "new": "Start a fresh bot session for this chat",
}


def bridge_commands(names: CommandNames | None = None) -> list[BotCommand]:
    """What `setMyCommands` registers: the configured words, disabled ones left out."""
    names = names or CommandNames()
    commands = []
    for role, description in COMMAND_DESCRIPTIONS.items():
        word = getattr(names, role)
        if word:
            commands.append(BotCommand(str(word).removeprefix("/"), description))
    return commands


@dataclass(frozen=True, slots=True)
class AddressedText:
    """Message text and its Bot API entities after removing `@ThisBot` from a command."""

    text: str
    entities: list[dict[str, Any]]


def address_command(
    text: str, entities: Sequence[Mapping[str, Any]], bot_username: str
) -> AddressedText | None:
    """Strip `@bot_username` from a leading `/cmd@bot_username`; None if it names another bot.

    Offsets are UTF-16 units, but a leading command and a bot username are ASCII, so the
    removed part has the same length in both units and later entities shift by exactly it.
    """
    plain = [dict(entity) for entity in entities]
    command = next(
        (e for e in plain if e.get("type") == "bot_command" and e.get("offset") == 0), None
    )
    if command is None:
        return AddressedText(text, plain)
    length = int(command.get("length", 0))
    name, at, target = text[:length].partition("@")
    if not at:
        return AddressedText(text, plain)
    if target.casefold() != bot_username.casefold():
        return None
    removed = len(at) + len(target)
    for entity in plain:
        if entity is command:
            entity["length"] = length - removed
        elif int(entity.get("offset", 0)) >= length:
            entity["offset"] = int(entity["offset"]) - removed
    return AddressedText(name + text[length:], plain)
