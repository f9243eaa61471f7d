"""Common Markdown (what BCN bots write) → document model, through markdown-it-py.

CommonMark plus `~~strikethrough~~`, with raw HTML switched off so that any `<tag>` a bot
writes stays visible text. `@Name` in ordinary text becomes a mention (see mention_words);
fenced blocks and paragraphs that are text-protocol messages become ProtocolBlock with their
source lines untouched. Headings become bold paragraphs and rules a line of dashes, since no
chat platform has either.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

from bridge.text.mention_words import split_mentions
from bridge.text.model import (
    Block,
    Code,
    CodeBlock,
    Document,
    Inline,
    LineBreak,
    Link,
    ListBlock,
    Paragraph,
    ProtocolBlock,
    Quote,
    Style,
    Styled,
    Text,
)
from bridge.text.normalize import normalize_inlines
from bridge.text.protocol_blocks import is_protocol_header

_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("strikethrough")

# One line of words and everyday punctuation, starting and ending with a word character:
# nothing Markdown would read as markup, so it is one paragraph of text as written.
_PLAIN_LINE = re.compile(r"[A-Za-z][A-Za-z0-9 ,.?!'\";:()]*[A-Za-z0-9.?!)]|[A-Za-z]")

_STYLE_OPENERS = {"strong_open": Style.BOLD, "em_open": Style.ITALIC, "s_open": Style.STRIKE}
_CLOSERS = {"strong_close", "em_close", "s_close", "link_close"}


def parse_markdown(markdown: str) -> Document:
    """Parse the common Markdown dialect into a Document; never raises on text input."""
    source = str(markdown).replace("\r\n", "\n").replace("\r", "\n")
    if _PLAIN_LINE.fullmatch(source) and "  " not in source:
        return Document((Paragraph((Text(source),)),))  # the common case, without a parser
    lines = source.split("\n")
    tokens = _MARKDOWN.parse(source)
    blocks, _ = _blocks(tokens, 0, lines, top_level=True)
    return Document(tuple(blocks))


def _blocks(
    tokens: Sequence[Token], index: int, lines: list[str], top_level: bool = False
) -> tuple[list[Block], int]:
    """Read blocks from `index` until the enclosing container closes; returns the next index."""
    blocks: list[Block] = []
    while index < len(tokens):
        token = tokens[index]
        kind = token.type
        if kind.endswith("_close"):
            return blocks, index + 1
        if kind in ("paragraph_open", "heading_open"):
            inline = tokens[index + 1]
            blocks.append(_paragraph(inline, lines, top_level, bold=kind == "heading_open"))
            index += 3
        elif kind in ("fence", "code_block"):
            blocks.append(_code_block(token, lines, top_level))
            index += 1
        elif kind == "blockquote_open":
            inner, index = _blocks(tokens, index + 1, lines)
            blocks.append(Quote(tuple(inner)))
        elif kind in ("bullet_list_open", "ordered_list_open"):
            block, index = _list(tokens, index, lines)
            blocks.append(block)
        elif kind == "hr":
            blocks.append(Paragraph((Text("———"),)))
            index += 1
        else:
            index += 1
    return blocks, index


def _list(tokens: Sequence[Token], index: int, lines: list[str]) -> tuple[ListBlock, int]:
    opener = tokens[index]
    ordered = opener.type == "ordered_list_open"
    start = _int_attr(opener, "start", 1) if ordered else 1
    items: list[tuple[Block, ...]] = []
    index += 1
    while index < len(tokens) and tokens[index].type == "list_item_open":
        inner, index = _blocks(tokens, index + 1, lines)
        items.append(tuple(inner))
    return ListBlock(tuple(items), ordered, start), index + 1


def _int_attr(token: Token, name: str, default: int) -> int:
    try:
        return int(str(token.attrs.get(name, default)))
    except ValueError:
        return default


def _paragraph(inline: Token, lines: list[str], top_level: bool, bold: bool) -> Block:
    if top_level and not bold and inline.map:
        raw = "\n".join(lines[inline.map[0] : inline.map[1]])
        if is_protocol_header(raw.split("\n", 1)[0]):
            return ProtocolBlock(raw)
    children = normalize_inlines(_inlines(inline.children or []))
    if bold:
        children = normalize_inlines((Styled(Style.BOLD, children),))
    return Paragraph(children)


def _code_block(token: Token, lines: list[str], top_level: bool) -> Block:
    content = token.content
    if token.type == "fence" and is_protocol_header(content.split("\n", 1)[0]):
        if top_level and token.map:
            return ProtocolBlock("\n".join(lines[token.map[0] : token.map[1]]))
        return ProtocolBlock(f"{token.markup}{token.info}\n{content}{token.markup}")
    language = token.info.strip().split(" ", 1)[0] if token.type == "fence" else ""
    return CodeBlock(content.removesuffix("\n"), language)


def _inlines(tokens: Sequence[Token]) -> list[Inline]:
    """Turn markdown-it's flat inline token list into nested nodes."""
    stack: list[tuple[Token | None, list[Inline]]] = [(None, [])]
    for token in tokens:
        kind = token.type
        children = stack[-1][1]
        if kind == "text":
            children.extend(split_mentions(token.content) if not _in_link(stack) else
                            [Text(token.content)])
        elif kind in ("softbreak", "hardbreak"):
            children.append(LineBreak())
        elif kind == "code_inline":
            children.append(Code(token.content))
        elif kind == "image":
            children.append(Link(str(token.attrs.get("src", "")), (Text(token.content),)))
        elif kind in _STYLE_OPENERS or kind == "link_open":
            stack.append((token, []))
        elif kind in _CLOSERS and len(stack) > 1:
            opener, inner = stack.pop()
            assert opener is not None
            stack[-1][1].append(_close(opener, inner))
    while len(stack) > 1:
        opener, inner = stack.pop()
        assert opener is not None
        stack[-1][1].append(_close(opener, inner))
    return stack[0][1]


def _in_link(stack: list[tuple[Token | None, list[Inline]]]) -> bool:
    return any(opener is not None and opener.type == "link_open" for opener, _ in stack)


def _close(opener: Token, inner: list[Inline]) -> Inline:
    if opener.type == "link_open":
        return Link(str(opener.attrs.get("href", "")), tuple(inner))
    return Styled(_STYLE_OPENERS[opener.type], tuple(inner))
