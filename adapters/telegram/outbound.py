"""How a bot's reply looks in Telegram: the name prefix and the plain-text fallback.

Telegram cannot post under another name, so a reply from the bridge's own bot starts with
the BCN bot's name in bold. The core splits text to `MAX_TEXT`, which leaves room for the
longest prefix within Telegram's 4096 visible characters.
"""

from __future__ import annotations

import html

from bridge.text import parse, render
from bridge.text.platforms import utf16_length

TELEGRAM_MAX_TEXT = 4096
"""Telegram's limit, in UTF-16 units of the visible text (tags do not count)."""

NAME_LIMIT = 64
"""Longest visible name in a prefix; longer names are cut and end in an ellipsis."""

PREFIX_ALLOWANCE = 80
MAX_TEXT = TELEGRAM_MAX_TEXT - PREFIX_ALLOWANCE
"""What the core may put in one message: a prefix (name + newline) always still fits."""


def short_name(label: str) -> str:
    """The label on one line, at most `NAME_LIMIT` UTF-16 units."""
    name = " ".join(label.split())
    if utf16_length(name) <= NAME_LIMIT:
        return name
    kept = ""
    for char in name:
        if utf16_length(kept + char) > NAME_LIMIT - 1:
            break
        kept += char
    return kept.rstrip() + "…"


def with_prefix(label: str, text_html: str) -> str:
    """`<b>Name</b>` on its own line above the reply; no prefix for an unnamed sender."""
    name = short_name(label)
    if not name:
        return text_html
    return f"<b>{html.escape(name, quote=False)}</b>\n{text_html}"


def with_plain_prefix(label: str, text: str) -> str:
    name = short_name(label)
    return f"{name}\n{text}" if name else text


def visible_text(text_html: str) -> str:
    """What a reader sees of Telegram HTML, for when Telegram refuses the HTML itself."""
    return render(parse(text_html, "telegram"), "plain")
