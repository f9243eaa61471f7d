"""How a bot's reply looks in Telegram: the name prefix and the plain-text fallback.

Telegram cannot post under another name, so a reply from the bridge's own bot starts with
the BCN bot's name in bold. The core splits text to `MAX_TEXT`, which leaves room for the
longest prefix within Telegram's 4096 visible characters.
"""

from __future__ import annotations

from bridge.text import parse, render
from bridge.text.prefix import PREFIX_ALLOWANCE, short_name, with_name_prefix

TELEGRAM_MAX_TEXT = 4096
"""Telegram's limit, in UTF-16 units of the visible text (tags do not count)."""

MAX_TEXT = TELEGRAM_MAX_TEXT - PREFIX_ALLOWANCE
"""What the core may put in one message: a prefix (name + newline) always still fits."""


def with_prefix(label: str, text_html: str) -> str:
    """`<b>Name</b>` on its own line above the reply; no prefix for an unnamed sender."""
    return with_name_prefix(label, text_html, "telegram")


def with_plain_prefix(label: str, text: str) -> str:
    name = short_name(label, "telegram")
    return f"{name}\n{text}" if name else text


def visible_text(text_html: str) -> str:
    """What a reader sees of Telegram HTML, for when Telegram refuses the HTML itself."""
    return render(parse(text_html, "telegram"), "plain")
