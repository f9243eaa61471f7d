"""Document model → plain text: no markup at all, nothing escaped, links spelled out."""

from __future__ import annotations

from bridge.text.model import CodeBlock, Link, Mention, MentionKind, Styled
from bridge.text.normalize import plain_text
from bridge.text.render_base import InlineContext
from bridge.text.render_lines import LineRenderer


class PlainRenderer(LineRenderer):
    bullet = "• "

    def text(self, text: str) -> str:
        return text

    def styled(self, node: Styled, context: InlineContext) -> str:
        return self.inlines(node.children, node)

    def code(self, text: str) -> str:
        return text

    def code_block(self, block: CodeBlock) -> str:
        return block.text

    def link(self, node: Link) -> str:
        label = plain_text(node.children)
        return node.url if label == node.url else f"{label} ({node.url})"

    def mention(self, node: Mention) -> str:
        if node.kind is MentionKind.EVERYONE:
            return f"@{node.name or 'everyone'}"
        prefix = "#" if node.kind is MentionKind.CHANNEL else "@"
        return prefix + self.display_name(node)
