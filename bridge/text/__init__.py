"""Text that survives every platform: parse once into a small model, render per platform,
split to the platform's limit. Pure functions over plain data — no I/O, no clock, no globals.
See docs/text.md.
"""

from bridge.text.convert import from_platform, matrix_html, parse, render, to_platform
from bridge.text.mentions import Directory, StaticDirectory
from bridge.text.model import (
    Block,
    Code,
    CodeBlock,
    Document,
    Inline,
    LineBreak,
    Link,
    ListBlock,
    Mention,
    MentionKind,
    Paragraph,
    ProtocolBlock,
    Quote,
    Style,
    Styled,
    Text,
)
from bridge.text.parse_discord import parse_discord
from bridge.text.parse_markdown import parse_markdown
from bridge.text.parse_slack import parse_slack
from bridge.text.parse_telegram import parse_telegram, parse_telegram_html
from bridge.text.platforms import (
    PLATFORM_COUNTING,
    PLATFORM_LIMITS,
    SLACK_BLOCK_LIMIT,
    TELEGRAM_CAPTION_LIMIT,
    Counting,
    Platform,
    platform_named,
)
from bridge.text.protocol_blocks import find_protocol_blocks, is_protocol_header
from bridge.text.render_discord import ZERO_WIDTH_SPACE
from bridge.text.split import length_on, split_for

__all__ = [
    "PLATFORM_COUNTING",
    "PLATFORM_LIMITS",
    "SLACK_BLOCK_LIMIT",
    "TELEGRAM_CAPTION_LIMIT",
    "ZERO_WIDTH_SPACE",
    "Block",
    "Code",
    "CodeBlock",
    "Counting",
    "Directory",
    "Document",
    "Inline",
    "LineBreak",
    "Link",
    "ListBlock",
    "Mention",
    "MentionKind",
    "Paragraph",
    "Platform",
    "ProtocolBlock",
    "Quote",
    "StaticDirectory",
    "Style",
    "Styled",
    "Text",
    "find_protocol_blocks",
    "from_platform",
    "is_protocol_header",
    "length_on",
    "matrix_html",
    "parse",
    "parse_discord",
    "parse_markdown",
    "parse_slack",
    "parse_telegram",
    "parse_telegram_html",
    "platform_named",
    "render",
    "split_for",
    "to_platform",
]
