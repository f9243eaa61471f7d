"""The small document model every dialect is parsed into and rendered from.

Parsing once into plain data and rendering from it is what keeps N dialects from needing N×N
converters. The model is deliberately small: only what chat platforms can show. Nodes are
frozen dataclasses with tuple children so that two documents compare equal exactly when they
mean the same thing (the round-trip tests rely on that).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Style(StrEnum):
    """An inline style that wraps other inlines."""

    BOLD = "bold"
    ITALIC = "italic"
    STRIKE = "strike"
    UNDERLINE = "underline"
    SPOILER = "spoiler"


class MentionKind(StrEnum):
    """What a mention points at; EVERYONE covers @everyone, @here and Slack's <!channel>."""

    USER = "user"
    ROLE = "role"
    CHANNEL = "channel"
    EVERYONE = "everyone"


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class LineBreak:
    """A line break inside a paragraph (chat platforms show every newline)."""


@dataclass(frozen=True)
class Styled:
    style: Style
    children: tuple[Inline, ...]


@dataclass(frozen=True)
class Code:
    text: str


@dataclass(frozen=True)
class Link:
    url: str
    children: tuple[Inline, ...]


@dataclass(frozen=True)
class Mention:
    """A mention of a user, role, channel or everyone.

    `name` is the human-readable name (without `@`/`#`), `platform_id` the platform's id when
    known. For EVERYONE, `name` is the word: "everyone", "here" or "channel".
    """

    kind: MentionKind
    name: str | None = None
    platform_id: str | None = None


Inline = Text | LineBreak | Styled | Code | Link | Mention


@dataclass(frozen=True)
class Paragraph:
    children: tuple[Inline, ...]


@dataclass(frozen=True)
class CodeBlock:
    text: str
    language: str = ""


@dataclass(frozen=True)
class ProtocolBlock:
    """A text-protocol message kept byte-for-byte, fences included, so bots can parse it."""

    text: str


@dataclass(frozen=True)
class Quote:
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class ListBlock:
    items: tuple[tuple[Block, ...], ...]
    ordered: bool = False
    start: int = 1


Block = Paragraph | CodeBlock | ProtocolBlock | Quote | ListBlock


@dataclass(frozen=True)
class Document:
    blocks: tuple[Block, ...] = ()


EVERYONE_WORDS = frozenset({"everyone", "here", "channel"})
