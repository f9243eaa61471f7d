"""How `@Name` in running text is recognised as a mention (common Markdown and plain text).

A mention is `@` followed by a name of letters, digits, `_`, `.` or `-` (not ending in `.` or
`-`), and not preceded by a word character, `@` or `.` (so `a@b.com` stays an address).
`@everyone`, `@here` and `@channel` are everyone-style mentions.
"""

from __future__ import annotations

import re

from bridge.text.model import EVERYONE_WORDS, Inline, Mention, MentionKind, Text

MENTION_WORD = re.compile(r"(?<![\w@.])@(?P<name>\w(?:[\w.-]*\w)?)")


def split_mentions(text: str) -> list[Inline]:
    """Text with every `@Name` turned into a Mention node."""
    nodes: list[Inline] = []
    cursor = 0
    for match in MENTION_WORD.finditer(text):
        if match.start() > cursor:
            nodes.append(Text(text[cursor : match.start()]))
        nodes.append(mention_for_word(match.group("name")))
        cursor = match.end()
    if cursor < len(text):
        nodes.append(Text(text[cursor:]))
    return nodes


def mention_for_word(name: str) -> Mention:
    if name.lower() in EVERYONE_WORDS:
        return Mention(MentionKind.EVERYONE, name.lower())
    return Mention(MentionKind.USER, name)
