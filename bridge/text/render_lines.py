"""Block layout shared by the line-oriented dialects (Markdown, Discord, Slack, plain text).

They agree on the shape of a message — blank lines between blocks, `> ` before quoted lines,
a marker before list items, ``` fences around code — and differ in inline markup and escaping,
which the subclasses supply.
"""

from __future__ import annotations

import re

from bridge.text.model import CodeBlock, ListBlock, Paragraph, ProtocolBlock, Quote
from bridge.text.render_base import Renderer

_LONG_BACKTICK_RUN = re.compile(r"`{3,}")


class LineRenderer(Renderer):
    bullet = "- "
    quote_prefix = "> "

    def line_break(self) -> str:
        return "\n"

    def paragraph(self, block: Paragraph) -> str:
        rendered = self.inlines(block.children)
        return "\n".join(self.guard_line_start(line) for line in rendered.split("\n"))

    def guard_line_start(self, line: str) -> str:
        """Escape text at a line start that the dialect would read as block markup."""
        return line

    def code_block(self, block: CodeBlock) -> str:
        body = self.code_block_text(block.text)
        return f"```{self.fence_language(block.language)}\n{body}\n```"

    def fence_language(self, language: str) -> str:
        return re.sub(r"[^\w+#.-]", "", language)

    def code_block_text(self, text: str) -> str:
        """Code as it can sit inside a ``` fence; a literal ``` would end the fence early."""
        return _LONG_BACKTICK_RUN.sub(lambda run: "`\u200b" * (len(run.group()) - 1) + "`", text)

    def protocol_block(self, block: ProtocolBlock) -> str:
        return block.text

    def quote(self, block: Quote) -> str:
        inner = self.render_blocks(block.blocks)
        prefix = self.quote_prefix
        return "\n".join(prefix + line if line else prefix.rstrip() for line in inner.split("\n"))

    def list_block(self, block: ListBlock) -> str:
        lines: list[str] = []
        for offset, item in enumerate(block.items):
            marker = f"{block.start + offset}. " if block.ordered else self.bullet
            body = "\n".join(self.block(child) for child in item)
            indent = " " * len(marker)
            for number, line in enumerate(body.split("\n") or [""]):
                lines.append((marker if number == 0 else indent if line else "") + line)
        return "\n".join(lines)


def escape_block_start(match: re.Match[str]) -> str:
    """Backslash a line-start block marker matched as (indent)(marker): `1. x` → `1\\. x`,
    `# x` → `\\# x`; for dialects that honour backslash escapes."""
    indent, marker = match.group(1), match.group(2)
    return indent + (marker + "\\" if marker[-1].isdigit() else "\\" + marker)
