"""A small rule-driven scanner for the chat dialects' inline markup (Discord, Slack).

Chat clients parse inline markup with ordered regex rules tried at each position (Discord's
simple-markdown works this way), so mimicking that shape is what makes our reading of a message
agree with what its users see. Nesting is bounded so hostile input cannot recurse without end.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bridge.text.model import Inline, LineBreak, Style, Styled, Text
from bridge.text.normalize import normalize_inlines

MAX_NESTING = 12


NodeBuilder = Callable[[re.Match[str], "InlineScanner", int], list[Inline]]
"""Builds nodes from a rule's match; gets the scanner and depth to parse nested content."""


@dataclass(frozen=True)
class InlineRule:
    pattern: re.Pattern[str]
    build: NodeBuilder


def styled_rule(pattern: str, style: Style) -> InlineRule:
    """A rule whose first group is content wrapped in `style`."""

    def build(match: re.Match[str], scanner: InlineScanner, depth: int) -> list[Inline]:
        return [Styled(style, scanner.scan(match.group(1), depth))]

    return InlineRule(re.compile(pattern), build)


class InlineScanner:
    """Scans one dialect's inline text into model nodes using its ordered rules."""

    def __init__(
        self,
        rules: Sequence[InlineRule],
        special: re.Pattern[str],
        plain: Callable[[str], str] = lambda text: text,
    ) -> None:
        self._rules = tuple(rules)
        self._special = special
        self._plain = plain

    def scan(self, text: str, depth: int = 0) -> tuple[Inline, ...]:
        nodes: list[Inline] = []
        plain_start = 0
        position = 0
        while position < len(text):
            built = None if depth > MAX_NESTING else self._try_rules(text, position, depth)
            if built is None:
                found = self._special.search(text, position + 1)
                position = found.start() if found else len(text)
                continue
            match, produced = built
            nodes.extend(self._plain_nodes(text[plain_start:position]))
            nodes.extend(produced)
            position = plain_start = match.end()
        nodes.extend(self._plain_nodes(text[plain_start:]))
        return normalize_inlines(nodes)

    def _try_rules(
        self, text: str, position: int, depth: int
    ) -> tuple[re.Match[str], list[Inline]] | None:
        for rule in self._rules:
            match = rule.pattern.match(text, position)
            if match and match.end() > position:
                return match, rule.build(match, self, depth + 1)
        return None

    def _plain_nodes(self, text: str) -> list[Inline]:
        nodes: list[Inline] = []
        for index, line in enumerate(text.split("\n")):
            if index:
                nodes.append(LineBreak())
            if line:
                nodes.append(Text(self._plain(line)))
        return nodes
