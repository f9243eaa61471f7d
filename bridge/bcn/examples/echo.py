"""The echo bot: answers every message it is asked to answer with that same text.

It streams the text back word by word, then sends the whole text as the final, which is
what a streaming chat UI needs to test edits. With `stream=False` it sends a single final,
which is what the hub benchmark measures. It never speaks unless BCN routes a `chat.send`
to it, so it cannot start a loop on its own.

A REQUEST or HANDOFF addressed to it (`/ask Echo say hi`, delivered raw) is answered in
protocol form — a RESPONSE echoing the task, as one final — so the request it closes does
not stay open until its timeout, as an echo of the block itself would leave it.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from bridge.bcn.bot import Bot, IncomingMessage, MessageHandler, Run
from bridge.bcn.examples.rules import reply_depth, requester_of
from bridge.protocol import DEFAULT_DEPTH, MessageType, build_response, escape_value, parse

_PIECES = re.compile(r"\S+\s*|\s+")


def stream_pieces(text: str) -> list[str]:
    """Split text into word-sized deltas that join back to exactly the same text."""
    return _PIECES.findall(text)


def protocol_echo(text: str, name: str) -> str | None:
    """The RESPONSE to a REQUEST or HANDOFF addressed to `name` (its task echoed), else None."""
    request = parse(text)
    if (request is None or request.type not in (MessageType.REQUEST, MessageType.HANDOFF)
            or request.to.lstrip("@").lower() != name.lower()):
        return None
    try:
        return build_response(
            to=requester_of(request), from_=name, request_id=request.request_id,
            status="done", result=escape_value(request.task or ""),
            depth=reply_depth(request.depth or DEFAULT_DEPTH),
            original_from=request.original_from,
        )
    except ValueError:  # a name or depth no builder accepts: echo it as text, as before
        return None


def make_echo_handler(*, stream: bool = True, word_delay: float = 0.0,
                      name: str = "Echo") -> MessageHandler:
    async def echo(message: IncomingMessage, run: Run) -> str:
        answer = protocol_echo(message.text, name)
        if answer is not None:
            return answer
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
    bot.on_message(make_echo_handler(stream=stream, word_delay=word_delay, name=name))
    return bot
