"""Slack mrkdwn → document model.

Slack sends `&`, `<` and `>` escaped and writes every mention, channel and link as a `<…>`
token; the style markers (`*b*`, `_i_`, `~s~`) only count at word boundaries and within a line.
"""

from __future__ import annotations

import re

from bridge.text.chat_blocks import BlockSyntax, parse_chat_blocks
from bridge.text.inline_scan import InlineRule, InlineScanner, styled_rule
from bridge.text.mentions import NO_DIRECTORY, Directory
from bridge.text.model import (
    EVERYONE_WORDS,
    Code,
    Document,
    Inline,
    Link,
    Mention,
    MentionKind,
    Style,
    Text,
)


def unescape_slack(text: str) -> str:
    """Undo Slack's three escapes (and only those, as Slack sends nothing else)."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _boundary_style(marker: str, style: Style) -> InlineRule:
    mark = re.escape(marker)
    return styled_rule(
        rf"(?<![\w{mark}]){mark}(?=[^\s{mark}])([^{mark}\n]*?[^\s{mark}]){mark}(?![\w{mark}])",
        style,
    )


def _angle_token(directory: Directory):
    def build(match: re.Match[str], scanner: InlineScanner, depth: int) -> list[Inline]:
        target, _, label = match.group(1).partition("|")
        label = unescape_slack(label)
        if target.startswith("@"):
            user_id = target[1:]
            return [Mention(MentionKind.USER, directory.name_for(user_id) or label or None,
                            user_id)]
        if target.startswith("#"):
            channel_id = target[1:]
            name = directory.name_for(channel_id) or label or None
            return [Mention(MentionKind.CHANNEL, name, channel_id)]
        if target.startswith("!"):
            return [_special_command(target[1:], label)]
        url = unescape_slack(target)
        return [Link(url, (Text(label or url),))]

    return build


def _special_command(command: str, label: str) -> Inline:
    word = command.lower()
    if word in EVERYONE_WORDS:
        return Mention(MentionKind.EVERYONE, word)
    if word.startswith("subteam^"):
        return Mention(MentionKind.ROLE, label.lstrip("@") or None, command.split("^", 1)[1])
    return Text(label or f"<!{command}>")


def _code(match: re.Match[str], scanner: InlineScanner, depth: int) -> list[Inline]:
    return [Code(unescape_slack(match.group(1)))]


def _slack_rules(directory: Directory) -> list[InlineRule]:
    return [
        InlineRule(re.compile(r"<([^<>\n]+)>"), _angle_token(directory)),
        InlineRule(re.compile(r"(?<![\w`])`([^`\n]+)`"), _code),
        _boundary_style("*", Style.BOLD),
        _boundary_style("_", Style.ITALIC),
        _boundary_style("~", Style.STRIKE),
    ]


_SPECIAL = re.compile(r"[<`*_~]")
_QUOTE = re.compile(r"^(?:>|&gt;) ?(?P<body>.*)$")
_BULLET = re.compile(r"^[ \t]*(?:[•◦▪-]|(?P<number>\d{1,9})\.) (?P<body>.*)$")


def parse_slack(text: str, directory: Directory | None = None) -> Document:
    """Parse a Slack message's mrkdwn text; `<@U…>` mentions get names from the directory."""
    scanner = InlineScanner(_slack_rules(directory or NO_DIRECTORY), _SPECIAL, unescape_slack)
    syntax = BlockSyntax(
        quote=_QUOTE, bullet=_BULLET, inline=scanner.scan, raw=unescape_slack,
        fence_language=False,
    )
    return parse_chat_blocks(text, syntax)


__all__ = ["parse_slack", "unescape_slack"]
