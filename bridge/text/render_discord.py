"""Document model → Discord markdown.

Plain text is escaped with backslashes (Discord shows `\\*` as `*`), except inside bare URLs,
whose underscores must stay as they are for the link to work. Mentions become `<@id>` when the
directory knows the name; everyone-style mentions get a zero-width space unless allowed.
"""

from __future__ import annotations

import re

from bridge.text.model import Link, Mention, MentionKind, Style, Styled
from bridge.text.normalize import plain_text
from bridge.text.render_base import InlineContext, backslash_outside_urls
from bridge.text.render_lines import LineRenderer, escape_block_start

ZERO_WIDTH_SPACE = "\u200b"

_SPECIAL = re.compile(r"([\\*_~`|<>\[\]])")
_EVERYONE_TEXT = re.compile(r"@(everyone|here)\b")
_BLOCK_START = re.compile(r"^(\s*)(#|-#|[-+](?=\s)|\d+(?=[.)]\s))")
_MARKERS = {
    Style.BOLD: "**",
    Style.UNDERLINE: "__",
    Style.STRIKE: "~~",
    Style.SPOILER: "||",
}
_WORD_EDGE = re.compile(r"\w")


def escape_discord(text: str) -> str:
    """Backslash-escape Discord markup in plain text, leaving bare URLs intact."""
    return backslash_outside_urls(text, _SPECIAL)


class DiscordRenderer(LineRenderer):
    def text(self, text: str) -> str:
        escaped = escape_discord(text)
        if self.options.allow_everyone:
            return escaped
        return _EVERYONE_TEXT.sub(f"@{ZERO_WIDTH_SPACE}\\1", escaped)

    def guard_line_start(self, line: str) -> str:
        return _BLOCK_START.sub(escape_block_start, line)

    def styled(self, node: Styled, context: InlineContext) -> str:
        marker = _MARKERS.get(node.style) or self._italic_marker(node, context)
        return f"{marker}{self.inlines(node.children, node)}{marker}"

    def _italic_marker(self, node: Styled, context: InlineContext) -> str:
        """`_` (which can hold `**` and `__` runs), or `*` where `_` would touch a word or
        open straight into an underline's `__`."""
        before, after = context.text_before()[-1:], context.text_after()[:1]
        first = node.children[0]
        opens_underline = isinstance(first, Styled) and first.style is Style.UNDERLINE
        if opens_underline or _WORD_EDGE.match(before or " ") or _WORD_EDGE.match(after or " "):
            return "*"
        return "_"

    def code(self, text: str) -> str:
        fence = "``" if "`" in text else "`"
        if fence == "``" or (text.startswith(" ") and text.endswith(" ") and text.strip()):
            return f"{fence} {text} {fence}"
        return f"{fence}{text}{fence}"

    def link(self, node: Link) -> str:
        label = plain_text(node.children)
        if not re.match(r"https?://", node.url, re.IGNORECASE):
            return self.text(label if label == node.url else f"{label} ({node.url})")
        url = node.url.replace(")", "%29").replace(" ", "%20")
        if label == node.url:
            return f"<{url}>"
        return f"[{self.inlines(node.children, node)}]({url})"

    def mention(self, node: Mention) -> str:
        if node.kind is MentionKind.EVERYONE:
            word = "here" if node.name == "here" else "everyone"
            return f"@{word}" if self.options.allow_everyone else f"@{ZERO_WIDTH_SPACE}{word}"
        platform_id = self.platform_id(node)
        if platform_id and platform_id.isdigit():
            sigil = {MentionKind.USER: "@", MentionKind.ROLE: "@&", MentionKind.CHANNEL: "#"}
            return f"<{sigil[node.kind]}{platform_id}>"
        prefix = "#" if node.kind is MentionKind.CHANNEL else "@"
        return prefix + self.text(self.display_name(node))

