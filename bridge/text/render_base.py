"""The walk over a Document that every renderer shares; dialects fill in the node hooks."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

from bridge.text.mentions import NO_DIRECTORY, Directory
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
    Styled,
    Text,
)

BARE_URL = re.compile(r"https?://[^\s<]+[^<.,:;\"')\]\s]")
"""A URL in running text, as chat clients auto-link it (trailing punctuation excluded)."""


def backslash_outside_urls(text: str, special: re.Pattern[str]) -> str:
    """Backslash every match of `special` except inside bare URLs, whose `_` and `*` must stay
    as they are for the link to keep working."""
    pieces: list[str] = []
    cursor = 0
    for url in BARE_URL.finditer(text):
        pieces.append(special.sub(r"\\\g<0>", text[cursor : url.start()]))
        pieces.append(url.group())
        cursor = url.end()
    pieces.append(special.sub(r"\\\g<0>", text[cursor:]))
    return "".join(pieces)


@dataclass(frozen=True)
class RenderOptions:
    directory: Directory = field(default=NO_DIRECTORY)
    allow_everyone: bool = False


@dataclass(frozen=True)
class InlineContext:
    """Where an inline sits: its neighbours decide which markers a dialect can use."""

    siblings: Sequence[Inline]
    index: int
    parent: Styled | Link | None

    def text_before(self) -> str:
        return _edge_text(self.siblings[self.index - 1]) if self.index else ""

    def text_after(self) -> str:
        following = self.index + 1
        if following >= len(self.siblings):
            return ""
        return _edge_text(self.siblings[following])


def _edge_text(node: Inline) -> str:
    if isinstance(node, Text):
        return node.text
    if isinstance(node, LineBreak):
        return "\n"
    return "x" if isinstance(node, Mention | Code) else ""


class Renderer(ABC):
    """Renders a Document by dispatching each node to a dialect hook."""

    def __init__(self, options: RenderOptions | None = None) -> None:
        self.options = options or RenderOptions()

    def render(self, document: Document) -> str:
        return self.render_blocks(document.blocks)

    def render_blocks(self, blocks: Sequence[Block]) -> str:
        return self.join_blocks([self.block(block) for block in blocks])

    def block(self, block: Block) -> str:
        if isinstance(block, Paragraph):
            return self.paragraph(block)
        if isinstance(block, CodeBlock):
            return self.code_block(block)
        if isinstance(block, ProtocolBlock):
            return self.protocol_block(block)
        if isinstance(block, Quote):
            return self.quote(block)
        return self.list_block(block)

    def inlines(self, nodes: Sequence[Inline], parent: Styled | Link | None = None) -> str:
        if len(nodes) == 1 and type(nodes[0]) is Text:
            # Most replies are one paragraph of plain text; text needs no neighbours, so
            # there is no context to build for it (what `inline` would do with it anyway).
            return self.text(nodes[0].text)
        return "".join(
            self.inline(node, InlineContext(nodes, index, parent))
            for index, node in enumerate(nodes)
        )

    def inline(self, node: Inline, context: InlineContext) -> str:
        if isinstance(node, Text):
            return self.text(node.text)
        if isinstance(node, LineBreak):
            return self.line_break()
        if isinstance(node, Styled):
            return self.styled(node, context)
        if isinstance(node, Code):
            return self.code(node.text)
        if isinstance(node, Link):
            return self.link(node)
        return self.mention(node)

    def platform_id(self, mention: Mention) -> str | None:
        """The mention's platform id, looked up by name when the model has none."""
        if mention.platform_id:
            return mention.platform_id
        if mention.name and mention.kind is not MentionKind.EVERYONE:
            return self.options.directory.id_for(mention.name)
        return None

    def display_name(self, mention: Mention) -> str:
        """The name to show, preferring what the directory knows for the id."""
        if mention.name:
            return mention.name
        if mention.platform_id:
            return self.options.directory.name_for(mention.platform_id) or mention.platform_id
        return "unknown"

    def join_blocks(self, rendered: list[str]) -> str:
        return "\n\n".join(part for part in rendered if part)

    @abstractmethod
    def text(self, text: str) -> str: ...

    @abstractmethod
    def line_break(self) -> str: ...

    @abstractmethod
    def styled(self, node: Styled, context: InlineContext) -> str: ...

    @abstractmethod
    def code(self, text: str) -> str: ...

    @abstractmethod
    def link(self, node: Link) -> str: ...

    @abstractmethod
    def mention(self, node: Mention) -> str: ...

    @abstractmethod
    def paragraph(self, block: Paragraph) -> str: ...

    @abstractmethod
    def code_block(self, block: CodeBlock) -> str: ...

    @abstractmethod
    def protocol_block(self, block: ProtocolBlock) -> str: ...

    @abstractmethod
    def quote(self, block: Quote) -> str: ...

    @abstractmethod
    def list_block(self, block: ListBlock) -> str: ...
