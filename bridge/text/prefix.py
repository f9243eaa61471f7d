"""The bold sender name above a reply, for platforms (or chats) that cannot post under it.

Telegram never can; Discord without the Manage Webhooks permission and Slack without the
`chat:write.customize` scope cannot either. The name is one line, cut to `NAME_LIMIT` as the
platform counts, and escaped in the platform's dialect so that a bot called `*_x_*` shows its
name instead of formatting it.
"""

from __future__ import annotations

from bridge.text.convert import render
from bridge.text.model import Document, Paragraph, Style, Styled, Text
from bridge.text.platforms import PLATFORM_COUNTING, char_weight, platform_named
from bridge.text.split import length_on

NAME_LIMIT = 64
"""Longest visible name in a prefix; longer names are cut and end in an ellipsis."""

PREFIX_ALLOWANCE = 80
"""Room a prefix takes at most (name, markers, newline): the core splits replies this much
below a platform's limit where the adapter may add a prefix."""


def short_name(label: str, platform: str, limit: int = NAME_LIMIT) -> str:
    """The label on one line, at most `limit` units as the platform counts them."""
    counting = PLATFORM_COUNTING[platform_named(platform)]
    name = " ".join(label.split())
    weights = [char_weight(char, counting) for char in name]
    if sum(weights) <= limit:
        return name
    kept, used = 0, 0
    while used + weights[kept] <= limit - 1:  # one unit left for the ellipsis
        used += weights[kept]
        kept += 1
    return name[:kept].rstrip() + "…"


def name_prefix(label: str, platform: str) -> str:
    """`**Name**` and a newline in the platform's dialect; empty for an unnamed sender.

    Never longer than `PREFIX_ALLOWANCE` as the platform counts, escapes included (a name of
    `*` doubles in Discord, of `&` quintuples in Slack): such names are cut shorter.
    """
    limit = NAME_LIMIT
    while True:
        name = short_name(label, platform, limit)
        if not name:
            return ""
        bold = Document((Paragraph((Styled(Style.BOLD, (Text(name),)),)),))
        prefix = render(bold, platform) + "\n"
        if length_on(prefix, platform) <= PREFIX_ALLOWANCE or limit <= 1:
            return prefix
        limit = max(1, limit // 2)


def with_name_prefix(label: str, text: str, platform: str) -> str:
    """`text` (already in the platform's dialect) under the sender's bold name."""
    return name_prefix(label, platform) + text
