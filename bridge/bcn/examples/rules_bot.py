"""The rules bot on BCN: `RulesBrain` behind the SDK, nothing more.

Kept apart from `rules.py` so that the decisions stay pure and the socket side stays thin.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bridge.bcn.bot import Bot, IncomingMessage, Run
from bridge.bcn.examples.rules import RulesBrain


def build_rules_bot(url: str, *, name: str = "Rules", **bot_options: Any) -> Bot:
    """A rules `Bot` named `name` (the name protocol messages must address); `bot_options`
    go to `Bot` (token_file, protocol_version, …)."""
    brain = RulesBrain(name)
    bot = Bot(url, name=name, **bot_options)

    @bot.on_message
    async def answer(message: IncomingMessage, run: Run) -> str:
        return brain.reply(message.text, session_key=message.session_key, now=datetime.now(UTC))

    return bot
