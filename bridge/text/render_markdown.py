"""Document model → the common Markdown BCN bots read (the inverse of parse_markdown).

Used for text coming from the platforms: mentions become `@Name`, markup becomes CommonMark
with `~~strike~~`. Escaping is minimal so bots read natural text: only characters that would
otherwise start markup get a backslash, and URLs are left alone. Underline and spoilers have
no Markdown form and render as their content.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bridge.text.model import (
    Block,
    CodeBlock,
    Link,
    ListBlock,
    Mention,
    MentionKind,
    Style,
    Styled,
)
from bridge.text.normalize import plain_text
from bridge.text.render_base import InlineContext, backslash_outside_urls
from bridge.text.render_lines import LineRenderer, escape_block_start

_SPECIAL = re.compile(r"([\\`*\[\]<~]|_(?![^\W_])|(?<![^\W_])_|&(?=#?\w+;))")
_BLOCK_START = re.compile(r"^(\s*)(#|>|[-+=](?=\s|$)|\d{1,9}(?=[.)](?:\s|$)))")
_MARKERS = {Style.BOLD: "**", Style.STRIKE: "~~"}
_WORD = re.compile(r"[^\W_]")


def escape_markdown(text: str) -> str:
    """Backslash only what would start Markdown markup; bare URLs stay intact."""
    return backslash_outside_urls(text, _SPECIAL)


class MarkdownRenderer(LineRenderer):
    def render_blocks(self, blocks: Sequence[Block]) -> str:
        """Back-to-back lists would merge into one, so every other one uses `*` / `)`."""
        rendered: list[str] = []
        previous: Block | None = None
        alternate = False
        for block in blocks:
            if isinstance(block, ListBlock):
                same_kind = isinstance(previous, ListBlock) and previous.ordered == block.ordered
                alternate = not alternate if same_kind else False
                rendered.append(self._list(block, alternate))
            else:
                rendered.append(self.block(block))
            previous = block
        return self.join_blocks(rendered)

    def _list(self, block: ListBlock, alternate: bool) -> str:
        text = self.list_block(block)
        if not alternate:
            return text
        if block.ordered:
            return re.sub(r"(?m)^(\d+)\. ", r"\1) ", text)
        return re.sub(r"(?m)^- ", "* ", text)

    def text(self, text: str) -> str:
        return escape_markdown(text)

    def guard_line_start(self, line: str) -> str:
        return _BLOCK_START.sub(escape_block_start, line)

    def styled(self, node: Styled, context: InlineContext) -> str:
        inner = self.inlines(node.children, node)
        if node.style is Style.ITALIC:
            before, after = context.text_before()[-1:], context.text_after()[:1]
            intraword = _WORD.match(before or " ") or _WORD.match(after or " ")
            marker = "*" if intraword else "_"
            return f"{marker}{inner}{marker}"
        marker = _MARKERS.get(node.style, "")
        return f"{marker}{inner}{marker}"

    def code(self, text: str) -> str:
        longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
        fence = "`" * (longest + 1)
        padded = text.startswith(("`", " ")) or text.endswith(("`", " "))
        return f"{fence} {text} {fence}" if padded else f"{fence}{text}{fence}"

    def code_block(self, block: CodeBlock) -> str:
        longest = max((len(run) for run in re.findall(r"`{3,}", block.text)), default=2)
        fence = "`" * (longest + 1)
        return f"{fence}{self.fence_language(block.language)}\n{block.text}\n{fence}"

    def link(self, node: Link) -> str:
        label = plain_text(node.children)
        if label == node.url and re.match(r"[a-z][a-z0-9+.-]*:[^\s<>]*\Z", node.url, re.I):
            return f"<{node.url}>"
        url = node.url.replace(" ", "%20").replace("<", "%3C").replace(">", "%3E")
        if re.search(r"[()\\]", url):
            url = f"<{url}>"
        return f"[{self.inlines(node.children, node)}]({url})"

    def mention(self, node: Mention) -> str:
        if node.kind is MentionKind.EVERYONE:
            return f"@{node.name or 'everyone'}"
        prefix = "#" if node.kind is MentionKind.CHANNEL else "@"
        return prefix + self.display_name(node)

