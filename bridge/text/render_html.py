"""Document model → HTML, in the two flavours the bridge sends: Telegram HTML and webchat HTML.

Everything from the model is escaped, so no input can inject markup; links are only emitted
for schemes on an allow-list. Telegram HTML has a fixed tag set and no paragraphs or lists
(newlines are literal), while the webchat gets ordinary semantic HTML. Protocol blocks are
escaped text with their fences, never `<pre>` entities that would hide the ``` characters.
"""

from __future__ import annotations

import re
from html import escape
from typing import ClassVar

from bridge.text.model import (
    CodeBlock,
    Link,
    ListBlock,
    Mention,
    MentionKind,
    Paragraph,
    ProtocolBlock,
    Quote,
    Style,
    Styled,
)
from bridge.text.render_base import InlineContext, Renderer, RenderOptions


def _language(language: str) -> str:
    return re.sub(r"[^\w+#.-]", "", language)


class TelegramHtmlRenderer(Renderer):
    """Telegram's parse_mode=HTML: b, i, u, s, tg-spoiler, code, pre, a, blockquote."""

    _TAGS: ClassVar[dict[Style, str]] = {
        Style.BOLD: "b",
        Style.ITALIC: "i",
        Style.UNDERLINE: "u",
        Style.STRIKE: "s",
        Style.SPOILER: "tg-spoiler",
    }
    _LINK_SCHEMES = ("http://", "https://", "mailto:", "tg://")

    def __init__(self, options: RenderOptions | None = None) -> None:
        super().__init__(options)
        self._quote_depth = 0

    def text(self, text: str) -> str:
        return escape(text, quote=False)

    def line_break(self) -> str:
        return "\n"

    def styled(self, node: Styled, context: InlineContext) -> str:
        tag = self._TAGS[node.style]
        return f"<{tag}>{self.inlines(node.children, node)}</{tag}>"

    def code(self, text: str) -> str:
        return f"<code>{escape(text, quote=False)}</code>"

    def link(self, node: Link) -> str:
        inner = self.inlines(node.children, node)
        if not node.url.lower().startswith(self._LINK_SCHEMES):
            return inner
        return f'<a href="{escape(node.url)}">{inner}</a>'

    def mention(self, node: Mention) -> str:
        name = self.display_name(node)
        if node.kind is MentionKind.USER:
            platform_id = self.platform_id(node)
            if platform_id and platform_id.isdigit():
                return f'<a href="tg://user?id={platform_id}">{escape(name)}</a>'
            if platform_id:
                return escape("@" + platform_id.lstrip("@"), quote=False)
        prefix = "#" if node.kind is MentionKind.CHANNEL else "@"
        return escape(prefix + name, quote=False)

    def paragraph(self, block: Paragraph) -> str:
        return self.inlines(block.children)

    def code_block(self, block: CodeBlock) -> str:
        body = escape(block.text, quote=False)
        language = _language(block.language)
        if language:
            return f'<pre><code class="language-{language}">{body}</code></pre>'
        return f"<pre>{body}</pre>"

    def protocol_block(self, block: ProtocolBlock) -> str:
        return escape(block.text, quote=False)

    def quote(self, block: Quote) -> str:
        """Telegram rejects nested blockquotes, so inner quotes become `> ` lines."""
        self._quote_depth += 1
        try:
            inner = self.render_blocks(block.blocks)
        finally:
            self._quote_depth -= 1
        if self._quote_depth:
            return "\n".join("&gt; " + line for line in inner.split("\n"))
        return f"<blockquote>{inner}</blockquote>"

    def list_block(self, block: ListBlock) -> str:
        lines: list[str] = []
        for offset, item in enumerate(block.items):
            marker = f"{block.start + offset}. " if block.ordered else "• "
            body = "\n".join(self.block(child) for child in item).split("\n")
            lines.append(marker + body[0])
            lines.extend("   " + line if line else line for line in body[1:])
        return "\n".join(lines)


class WebchatHtmlRenderer(Renderer):
    """Semantic HTML for the bridge's own webchat page."""

    _TAGS: ClassVar[dict[Style, tuple[str, str]]] = {
        Style.BOLD: ("<strong>", "</strong>"),
        Style.ITALIC: ("<em>", "</em>"),
        Style.UNDERLINE: ("<u>", "</u>"),
        Style.STRIKE: ("<s>", "</s>"),
        Style.SPOILER: ('<span class="spoiler">', "</span>"),
    }
    _LINK_SCHEMES = ("http://", "https://", "mailto:")

    def join_blocks(self, rendered: list[str]) -> str:
        return "\n".join(part for part in rendered if part)

    def text(self, text: str) -> str:
        return escape(text)

    def line_break(self) -> str:
        return "<br>\n"

    def styled(self, node: Styled, context: InlineContext) -> str:
        opening, closing = self._TAGS[node.style]
        return f"{opening}{self.inlines(node.children, node)}{closing}"

    def code(self, text: str) -> str:
        return f"<code>{escape(text)}</code>"

    def link(self, node: Link) -> str:
        inner = self.inlines(node.children, node)
        if not node.url.lower().startswith(self._LINK_SCHEMES):
            return inner
        return (
            f'<a href="{escape(node.url)}" rel="noopener noreferrer nofollow" '
            f'target="_blank">{inner}</a>'
        )

    def mention(self, node: Mention) -> str:
        label = ("#" if node.kind is MentionKind.CHANNEL else "@") + self.display_name(node)
        return f'<span class="mention mention-{node.kind.value}">{escape(label)}</span>'

    def paragraph(self, block: Paragraph) -> str:
        return f"<p>{self.inlines(block.children)}</p>"

    def code_block(self, block: CodeBlock) -> str:
        language = _language(block.language)
        attribute = f' class="language-{language}"' if language else ""
        return f"<pre><code{attribute}>{escape(block.text)}</code></pre>"

    def protocol_block(self, block: ProtocolBlock) -> str:
        return f'<pre class="protocol">{escape(block.text)}</pre>'

    def quote(self, block: Quote) -> str:
        inner = self.render_blocks(block.blocks)
        return f"<blockquote>{inner}</blockquote>"

    def list_block(self, block: ListBlock) -> str:
        tag = "ol" if block.ordered else "ul"
        start = f' start="{block.start}"' if block.ordered and block.start != 1 else ""
        items = "".join(
            f"<li>{self.render_blocks(item)}</li>"
            for item in block.items
        )
        return f"<{tag}{start}>{items}</{tag}>"


MATRIX_TO = "https://matrix.to/#/"
"""Where a Matrix pill links: `https://matrix.to/#/@user:server`."""


def is_matrix_user_id(value: str) -> bool:
    return value.startswith("@") and ":" in value


class MatrixHtmlRenderer(WebchatHtmlRenderer):
    """`formatted_body` (`org.matrix.custom.html`): the HTML subset Matrix clients show,
    mentions as pills. Protocol blocks are `<pre>` with their fences, like the `body`."""

    def link(self, node: Link) -> str:
        inner = self.inlines(node.children, node)
        if not node.url.lower().startswith(self._LINK_SCHEMES):
            return inner
        return f'<a href="{escape(node.url)}">{inner}</a>'

    def styled(self, node: Styled, context: InlineContext) -> str:
        if node.style is Style.SPOILER:
            return f"<span data-mx-spoiler>{self.inlines(node.children, node)}</span>"
        return super().styled(node, context)

    def mention(self, node: Mention) -> str:
        name = self.display_name(node)
        platform_id = self.platform_id(node) if node.kind is MentionKind.USER else None
        if platform_id and is_matrix_user_id(platform_id):
            return f'<a href="{MATRIX_TO}{escape(platform_id)}">{escape(name)}</a>'
        prefix = "#" if node.kind is MentionKind.CHANNEL else "@"
        return escape(prefix + name)

    def protocol_block(self, block: ProtocolBlock) -> str:
        return f"<pre><code>{escape(block.text)}</code></pre>"
