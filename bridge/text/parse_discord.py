"""Discord markdown → document model.

Rules are tried in the order Discord's client applies them: escapes, `<…>` mentions, bare URLs
(whose underscores are not markup), masked links, inline code, then the style markers.
"""

from __future__ import annotations

import re

from bridge.text.chat_blocks import BlockSyntax, parse_chat_blocks
from bridge.text.inline_scan import InlineRule, InlineScanner, styled_rule
from bridge.text.mentions import NO_DIRECTORY, Directory
from bridge.text.model import (
    Code,
    Document,
    Inline,
    Link,
    Mention,
    MentionKind,
    Style,
    Text,
)

_BARE_URL = r"https?://[^\s<]+[^<.,:;\"')\]\s]"
_CONTENT = r"((?:\\[\s\S]|[^\\])+?)"
# `[text](url)`. The text holds no unescaped `[` (nor does Discord's client read one there);
# allowing it made every `[` of a `[[[…` line rescan to the end of the line: quadratic.
_MASKED_LINK = r"\[((?:\\[\s\S]|[^\\\[\]\n])+)\]\(<?(https?://[^\s)>]+)>?\)"


def _discord_rules(directory: Directory) -> list[InlineRule]:
    def mention(kind: MentionKind):
        def build(match: re.Match[str], scanner: InlineScanner, depth: int) -> list[Inline]:
            platform_id = match.group(1)
            return [Mention(kind, directory.name_for(platform_id), platform_id)]

        return build

    def escape(match: re.Match[str], scanner: InlineScanner, depth: int) -> list[Inline]:
        return [Text(match.group(1))]

    def literal(match: re.Match[str], scanner: InlineScanner, depth: int) -> list[Inline]:
        return [Text(match.group(0))]

    def url(match: re.Match[str], scanner: InlineScanner, depth: int) -> list[Inline]:
        return [Text(match.group(0))]

    def angle_url(match: re.Match[str], scanner: InlineScanner, depth: int) -> list[Inline]:
        return [Link(match.group(1), (Text(match.group(1)),))]

    def masked(match: re.Match[str], scanner: InlineScanner, depth: int) -> list[Inline]:
        return [Link(match.group(2), scanner.scan(match.group(1), depth))]

    def everyone(match: re.Match[str], scanner: InlineScanner, depth: int) -> list[Inline]:
        return [Mention(MentionKind.EVERYONE, match.group(1))]

    def code(match: re.Match[str], scanner: InlineScanner, depth: int) -> list[Inline]:
        body = match.group(2)
        if len(match.group(1)) > 1 and body.startswith(" ") and body.endswith(" "):
            body = body[1:-1]
        return [Code(body)]

    return [
        InlineRule(re.compile(r"\\([^0-9A-Za-z\s])"), escape),
        InlineRule(re.compile(r"<@!?(\d+)>"), mention(MentionKind.USER)),
        InlineRule(re.compile(r"<@&(\d+)>"), mention(MentionKind.ROLE)),
        InlineRule(re.compile(r"<#(\d+)>"), mention(MentionKind.CHANNEL)),
        InlineRule(re.compile(r"<a?:\w+:\d+>"), literal),
        InlineRule(re.compile(r"<(https?://[^\s>]+)>"), angle_url),
        InlineRule(re.compile(_BARE_URL), url),
        InlineRule(re.compile(_MASKED_LINK), masked),
        InlineRule(re.compile(r"@(everyone|here)\b"), everyone),
        InlineRule(re.compile(r"(`+)([\s\S]*?[^`])\1(?!`)"), code),
        styled_rule(rf"\*\*{_CONTENT}\*\*(?!\*)", Style.BOLD),
        styled_rule(rf"__{_CONTENT}__(?!_)", Style.UNDERLINE),
        styled_rule(r"\*(?=\S)((?:\\[\s\S]|\*\*|[^\\*])+?)(?<=\S)\*(?!\*)", Style.ITALIC),
        styled_rule(r"_((?:\\[\s\S]|__|[^\\_])+?)_(?!\w)", Style.ITALIC),
        styled_rule(rf"~~{_CONTENT}~~", Style.STRIKE),
        styled_rule(rf"\|\|{_CONTENT}\|\|", Style.SPOILER),
    ]


_SPECIAL = re.compile(r"[\\<*_~|`\[@h]")
_QUOTE = re.compile(r"^>>?>? (?P<body>.*)$|^>$(?P<empty>)")
_BULLET = re.compile(r"^[ \t]*(?:[-*]|(?P<number>\d{1,9})\.) (?P<body>.*)$")


def parse_discord(text: str, directory: Directory | None = None) -> Document:
    """Parse a Discord message's content; `<@id>` mentions get names from the directory."""
    scanner = InlineScanner(_discord_rules(directory or NO_DIRECTORY), _SPECIAL)
    syntax = BlockSyntax(quote=_QUOTE, bullet=_BULLET, inline=scanner.scan)
    return parse_chat_blocks(text, syntax)
