"""When does a plain message, replying to nothing, answer a bot's question?

A person answers a CLARIFY for sure by replying to it, by `Re: <id>: …` or by a tap. A plain
message in the chat only *may* be the answer: the person may just as well be talking to
someone else. It is taken as the answer to the one question waiting for its sender only when
it plausibly is one:

- it is not a command, nor protocol text, nor addressed (`@Name`) to anyone but the bot
  that asked;
- when the question offered choices (`Options:`), it names one of them ("Tokyo", "Tokyo
  please");
- otherwise it is short: one paragraph of at most `MAX_PLAIN_ANSWER` characters.

Anything else goes on as an ordinary message, and the question keeps waiting. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bridge.protocol import parse

MAX_PLAIN_ANSWER = 280
"""Longer than this, a message that replies to nothing is a message, not an answer."""
_MENTION = re.compile(r"(?<![\w@])@([^\s@,.;:!?()\[\]{}<>\"']+)")


def plausible_answer(text: str, *, asker: str, options: Sequence[str] = (),
                     mentions: Sequence[str] = ()) -> bool:
    """Is `text` (a person's message replying to nothing) plausibly their answer to the
    question `asker` asked them (see the module doc)?"""
    stripped = text.strip()
    if not stripped or stripped.startswith("/") or parse(stripped) is not None:
        return False
    addressed = {name.casefold().lstrip("@") for name in mentions}
    addressed |= {name.casefold() for name in _MENTION.findall(stripped)}
    if addressed - {asker.casefold()}:
        return False
    if options:
        return any(_names(stripped, option) for option in options)
    return len(stripped) <= MAX_PLAIN_ANSWER and "\n\n" not in stripped


def _names(text: str, option: str) -> bool:
    """Does `text` name `option`, as words of their own (case aside)?"""
    words = option.strip()
    if not words:
        return False
    return re.search(rf"(?<!\w){re.escape(words)}(?!\w)", text, re.IGNORECASE) is not None
