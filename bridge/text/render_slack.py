"""Document model → Slack mrkdwn.

Slack needs only `&`, `<` and `>` escaped; it has no escape for `*`, `_` or `~`, which only act
as markup at word boundaries anyway. Underline and spoilers do not exist in mrkdwn and render
as their plain content. Everyone-style mentions stay plain `@here` text unless allowed.
"""

from __future__ import annotations

from bridge.text.model import CodeBlock, Link, Mention, MentionKind, ProtocolBlock, Style, Styled
from bridge.text.normalize import plain_text
from bridge.text.render_base import InlineContext
from bridge.text.render_lines import LineRenderer

_MARKERS = {Style.BOLD: "*", Style.ITALIC: "_", Style.STRIKE: "~"}
_ALLOWED_LINK_SCHEMES = ("http://", "https://", "mailto:")


def escape_slack(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class SlackRenderer(LineRenderer):
    bullet = "• "

    def text(self, text: str) -> str:
        return escape_slack(text)

    def styled(self, node: Styled, context: InlineContext) -> str:
        inner = self.inlines(node.children, node)
        marker = _MARKERS.get(node.style, "")
        return f"{marker}{inner}{marker}"

    def code(self, text: str) -> str:
        return f"`{escape_slack(text)}`"

    def code_block(self, block: CodeBlock) -> str:
        return f"```\n{escape_slack(self.code_block_text(block.text))}\n```"

    def protocol_block(self, block: ProtocolBlock) -> str:
        return escape_slack(block.text)

    def link(self, node: Link) -> str:
        label = plain_text(node.children)
        if not node.url.lower().startswith(_ALLOWED_LINK_SCHEMES):
            return self.text(label)
        url = escape_slack(node.url.replace("|", "%7C"))
        if label == node.url:
            return f"<{url}>"
        return f"<{url}|{escape_slack(label.replace(chr(10), ' '))}>"

    def mention(self, node: Mention) -> str:
        if node.kind is MentionKind.EVERYONE:
            word = node.name or "everyone"
            return f"<!{word}>" if self.options.allow_everyone else f"@{word}"
        platform_id = self.platform_id(node)
        if platform_id:
            if node.kind is MentionKind.USER:
                return f"<@{escape_slack(platform_id)}>"
            if node.kind is MentionKind.CHANNEL:
                return f"<#{escape_slack(platform_id)}>"
            return f"<!subteam^{escape_slack(platform_id)}>"
        prefix = "#" if node.kind is MentionKind.CHANNEL else "@"
        return prefix + escape_slack(self.display_name(node))
