"""The echo bot: answers every message it is asked to answer with that same text.

It streams the text back word by word, then sends the whole text as the final, which is
what a streaming chat UI needs to test edits. With `stream=False` it sends a single final,
which is what the hub benchmark measures. It never speaks unless BCN routes a `chat.send`
to it, so it cannot start a loop on its own.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from bridge.bcn.bot import Bot, IncomingMessage, MessageHandler, Run

_PIECES = re.compile(r"\S+\s*|\s+")


def stream_pieces(text: str) -> list[str]:
    """Split text into word-sized deltas that join back to exactly the same text."""
    return _PIECES.findall(text)


def make_echo_handler(*, stream: bool = True, word_delay: float = 0.0) -> MessageHandler:
    async def echo(message: IncomingMessage, run: Run) -> str:
        if stream:
            for piece in stream_pieces(message.text):
                await run.delta(piece)
                if word_delay > 0:
                    await asyncio.sleep(word_delay)
        return message.text

    return echo


def build_echo_bot(
    url: str,
    *,
    name: str = "Echo",
    stream: bool = True,
    word_delay: float = 0.0,
    **bot_options: Any,
) -> Bot:
    """An echo `Bot`; `bot_options` go to `Bot` (token_file, protocol_version, …)."""
    bot = Bot(url, name=name, **bot_options)
    bot.on_message(make_echo_handler(stream=stream, word_delay=word_delay))
    return bot
