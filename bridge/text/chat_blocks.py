"""Line-based block structure shared by the chat dialects (Discord markdown, Slack mrkdwn).

Both platforms read a message line by line: a line opening with ``` starts a code block, lines
opening with a quote marker form a quote, bullet lines form a list, blank lines separate
paragraphs. The dialects differ only in the markers, which they pass in as a BlockSyntax.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from bridge.text.model import (
    Block,
    CodeBlock,
    Document,
    Inline,
    ListBlock,
    Paragraph,
    ProtocolBlock,
    Quote,
)
from bridge.text.protocol_blocks import is_protocol_header

MAX_QUOTE_NESTING = 8


@dataclass(frozen=True)
class BlockSyntax:
    quote: re.Pattern[str]
    """Matches a quote line; group "body" is the quoted text."""
    bullet: re.Pattern[str]
    """Matches a list line; group "body" is the item, group "number" set for ordered items."""
    inline: Callable[[str], tuple[Inline, ...]]
    raw: Callable[[str], str] = lambda text: text
    """Decodes raw code text (Slack's &amp; escapes)."""
    fence_language: bool = True


_FENCE = "```"


def parse_chat_blocks(text: str, syntax: BlockSyntax, depth: int = 0) -> Document:
    lines = str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.lstrip().startswith(_FENCE):
            block, index = _fenced(lines, index, syntax)
            blocks.append(block)
        elif depth < MAX_QUOTE_NESTING and syntax.quote.match(line):
            quoted: list[str] = []
            while index < len(lines) and (match := syntax.quote.match(lines[index])):
                quoted.append(match.group("body") or "")
                index += 1
            inner = parse_chat_blocks("\n".join(quoted), syntax, depth + 1)
            blocks.append(Quote(inner.blocks))
        elif syntax.bullet.match(line):
            block, index = _list(lines, index, syntax)
            blocks.append(block)
        elif not line.strip():
            index += 1
        else:
            start = index
            index += 1
            while index < len(lines) and not _starts_block(lines[index], syntax, depth):
                index += 1
            children = syntax.inline("\n".join(lines[start:index]).strip())
            if children:
                blocks.append(Paragraph(children))
    return Document(tuple(blocks))


def _starts_block(line: str, syntax: BlockSyntax, depth: int) -> bool:
    return (
        not line.strip()
        or line.lstrip().startswith(_FENCE)
        or (depth < MAX_QUOTE_NESTING and syntax.quote.match(line) is not None)
        or syntax.bullet.match(line) is not None
    )


def _fenced(lines: list[str], index: int, syntax: BlockSyntax) -> tuple[Block, int]:
    """A fenced block from the line at `index`; an unclosed fence runs to the end."""
    opener = lines[index].lstrip()[len(_FENCE) :]
    body: list[str] = []
    first = opener
    language = ""
    if syntax.fence_language and re.fullmatch(r"[\w+#.-]+", opener.strip() or "-"):
        language, first = opener.strip(), None
    if first is not None and first.endswith(_FENCE) and first.strip() != "":
        return _code(lines[index : index + 1], [first[: -len(_FENCE)]], "", syntax), index + 1
    if first:
        body.append(first)
    cursor = index + 1
    while cursor < len(lines):
        line = lines[cursor]
        if line.rstrip().endswith(_FENCE):
            closing = line.rstrip()[: -len(_FENCE)]
            if closing:
                body.append(closing)
            return _code(lines[index : cursor + 1], body, language, syntax), cursor + 1
        body.append(line)
        cursor += 1
    return _code(lines[index:], body, language, syntax), cursor


def _code(raw_lines: list[str], body: list[str], language: str, syntax: BlockSyntax) -> Block:
    if body and is_protocol_header(syntax.raw(body[0])):
        return ProtocolBlock(syntax.raw("\n".join(raw_lines)))
    return CodeBlock(syntax.raw("\n".join(body)), language)


def _list(lines: list[str], index: int, syntax: BlockSyntax) -> tuple[ListBlock, int]:
    first = syntax.bullet.match(lines[index])
    assert first is not None
    ordered = first.group("number") is not None
    start = int(first.group("number")) if ordered else 1
    items: list[tuple[Block, ...]] = []
    while index < len(lines):
        match = syntax.bullet.match(lines[index])
        if match is None or (match.group("number") is not None) != ordered:
            break
        children = syntax.inline((match.group("body") or "").strip())
        items.append((Paragraph(children),) if children else ())
        index += 1
    return ListBlock(tuple(items), ordered, start), index
