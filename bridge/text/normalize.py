"""Canonical form for inline sequences, so equal meaning gives equal models.

Every parser funnels its output through here: adjacent text merges, empty styles and links
without text vanish, and a style nested inside the same style collapses.
"""

from __future__ import annotations

from collections.abc import Iterable

from bridge.text.model import (
    Code,
    Inline,
    LineBreak,
    Link,
    Mention,
    MentionKind,
    Style,
    Styled,
    Text,
)


def normalize_inlines(
    inlines: Iterable[Inline], _active: frozenset[Style] = frozenset()
) -> tuple[Inline, ...]:
    out: list[Inline] = []
    for node in inlines:
        if isinstance(node, Styled):
            inner = normalize_inlines(node.children, _active | {node.style})
            if not inner:
                continue
            if node.style in _active:
                _extend(out, inner)
                continue
            node = _canonical_nesting(Styled(node.style, inner))
        elif isinstance(node, Link):
            inner = normalize_inlines(node.children, _active)
            node = Link(node.url, inner or (Text(node.url),))
        elif isinstance(node, Text | Code) and not node.text:
            continue
        _extend(out, (node,))
    return tuple(out)


STYLE_NESTING = (Style.SPOILER, Style.STRIKE, Style.BOLD, Style.ITALIC, Style.UNDERLINE)
"""Outer → inner order for styles that wrap exactly the same content: `**_x_**` and `_**x**_`
look the same, so the model keeps one canonical form."""


def _canonical_nesting(node: Styled) -> Styled:
    chain = [node.style]
    inner = node.children
    while len(inner) == 1 and isinstance(inner[0], Styled):
        chain.append(inner[0].style)
        inner = inner[0].children
    for style in sorted(chain, key=STYLE_NESTING.index, reverse=True):
        inner = (Styled(style, inner),)
    result = inner[0]
    assert isinstance(result, Styled)
    return result


def _extend(out: list[Inline], nodes: Iterable[Inline]) -> None:
    for node in nodes:
        if isinstance(node, Text) and out and isinstance(out[-1], Text):
            out[-1] = Text(out[-1].text + node.text)
        else:
            out.append(node)


def strip_edges(inlines: tuple[Inline, ...]) -> tuple[Inline, ...]:
    """Drop leading and trailing whitespace text, which no dialect can carry reliably."""
    items = list(inlines)
    if items and isinstance(items[0], Text):
        items[0] = Text(items[0].text.lstrip(" \t"))
    if items and isinstance(items[-1], Text):
        items[-1] = Text(items[-1].text.rstrip(" \t"))
    return normalize_inlines(items)


def plain_text(inlines: Iterable[Inline]) -> str:
    """The visible characters of an inline sequence, without any markup."""
    parts: list[str] = []
    for node in inlines:
        if isinstance(node, Text | Code):
            parts.append(node.text)
        elif isinstance(node, LineBreak):
            parts.append("\n")
        elif isinstance(node, Styled | Link):
            parts.append(plain_text(node.children))
        elif isinstance(node, Mention):
            parts.append(mention_label(node))
    return "".join(parts)


def mention_label(node: Mention) -> str:
    """How a mention reads as text: `@Name`, `#channel`, `@everyone`."""
    label = node.name or node.platform_id or "unknown"
    return ("#" if node.kind is MentionKind.CHANNEL else "@") + label
