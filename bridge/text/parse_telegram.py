"""Telegram (text + entities, or Telegram HTML) → document model.

Telegram keeps markup outside the text, as entities with offsets in UTF-16 code units, so the
first job is mapping those offsets onto Python string indices without ever cutting a surrogate
pair. Telegram HTML is read into the same (text, spans) shape, so both share one tree builder.
A `pre` entity whose first line is a protocol header comes back as a ProtocolBlock with fences
restored, and protocol blocks posted with literal fences are recognised in the text itself.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from bridge.text.mentions import NO_DIRECTORY, Directory
from bridge.text.model import (
    Block,
    Code,
    CodeBlock,
    Document,
    Inline,
    LineBreak,
    Link,
    Mention,
    MentionKind,
    Paragraph,
    ProtocolBlock,
    Quote,
    Style,
    Styled,
    Text,
)
from bridge.text.normalize import normalize_inlines, strip_edges
from bridge.text.protocol_blocks import find_protocol_blocks, is_protocol_header

_STYLES = {
    "bold": Style.BOLD,
    "italic": Style.ITALIC,
    "underline": Style.UNDERLINE,
    "strikethrough": Style.STRIKE,
    "spoiler": Style.SPOILER,
}
_BLOCK_KINDS = frozenset({"pre", "blockquote", "expandable_blockquote", "protocol"})
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
MAX_NESTING = 16


@dataclass(frozen=True)
class Span:
    """One entity in Python string indices."""

    start: int
    end: int
    kind: str
    url: str = ""
    language: str = ""
    user: Mapping[str, Any] | None = None


def parse_telegram(
    text: str,
    entities: Sequence[Mapping[str, Any]] | None = None,
    directory: Directory | None = None,
) -> Document:
    """Parse a Telegram message from its text and Bot API entities (JSON-shaped dicts)."""
    text = str(text)
    spans = [span for raw in entities or () if (span := _span_from_entity(text, raw))]
    return _TreeBuilder(text, directory or NO_DIRECTORY).document(spans)


def parse_telegram_html(html_text: str, directory: Directory | None = None) -> Document:
    """Parse Telegram-flavoured HTML (what the bridge sends with parse_mode=HTML)."""
    reader = _TelegramHtmlReader()
    reader.feed(str(html_text))
    reader.close()
    text, spans = reader.result()
    return _TreeBuilder(text, directory or NO_DIRECTORY).document(spans)


def utf16_index_map(text: str) -> list[int]:
    """UTF-16 offset of every Python index (and of the end), for bisecting entity offsets."""
    offsets = [0]
    for char in text:
        offsets.append(offsets[-1] + (2 if ord(char) > 0xFFFF else 1))
    return offsets


def _span_from_entity(text: str, raw: Mapping[str, Any]) -> Span | None:
    try:
        offset, length = int(raw["offset"]), int(raw["length"])
        kind = str(raw["type"])
    except (KeyError, TypeError, ValueError):
        return None
    if length <= 0 or offset < 0:
        return None
    offsets = utf16_index_map(text)
    start = bisect.bisect_left(offsets, offset)
    end = bisect.bisect_left(offsets, offset + length)
    start, end = min(start, len(text)), min(end, len(text))
    if start >= end:
        return None
    user = raw.get("user")
    return Span(
        start, end, kind,
        url=str(raw.get("url") or ""),
        language=str(raw.get("language") or ""),
        user=user if isinstance(user, Mapping) else None,
    )


class _TreeBuilder:
    def __init__(self, text: str, directory: Directory) -> None:
        self._text = text
        self._directory = directory

    def document(self, spans: list[Span]) -> Document:
        protocol = [Span(s, e, "protocol") for s, e in find_protocol_blocks(self._text)]
        return Document(tuple(self._blocks(0, len(self._text), protocol + spans, 0)))

    def _blocks(self, start: int, end: int, spans: list[Span], depth: int) -> list[Block]:
        inside = [s for s in spans if s.start < end and s.end > start]
        block_spans = _outermost([s for s in inside if s.kind in _BLOCK_KINDS])
        blocks: list[Block] = []
        cursor = start
        for block in block_spans:
            blocks.extend(self._paragraphs(cursor, block.start, inside, depth))
            blocks.append(self._block(block, inside, depth))
            cursor = block.end
        blocks.extend(self._paragraphs(cursor, end, inside, depth))
        return blocks

    def _block(self, span: Span, spans: list[Span], depth: int) -> Block:
        body = self._text[span.start : span.end]
        if span.kind == "protocol":
            return ProtocolBlock(body)
        if span.kind == "pre":
            if is_protocol_header(body.split("\n", 1)[0]):
                return ProtocolBlock(f"```\n{body.removesuffix(chr(10))}\n```")
            language = span.language or next(
                (s.language for s in spans if s.kind == "code" and s.start == span.start), ""
            )
            return CodeBlock(body.removesuffix("\n"), language)
        if depth >= MAX_NESTING:
            return Quote((Paragraph((Text(body),)),))
        nested = [s for s in spans if s is not span and span.start <= s.start and s.end <= span.end]
        return Quote(tuple(self._blocks(span.start, span.end, nested, depth + 1)))

    def _paragraphs(self, start: int, end: int, spans: list[Span], depth: int) -> list[Block]:
        paragraphs: list[Block] = []
        cursor = start
        for match in _PARAGRAPH_BREAK.finditer(self._text, start, end):
            paragraphs.extend(self._paragraph(cursor, match.start(), spans))
            cursor = match.end()
        paragraphs.extend(self._paragraph(cursor, end, spans))
        return paragraphs

    def _paragraph(self, start: int, end: int, spans: list[Span]) -> list[Block]:
        text = self._text
        while start < end and text[start] in "\n":
            start += 1
        while end > start and text[end - 1] in "\n":
            end -= 1
        inline_spans = [
            Span(max(s.start, start), min(s.end, end), s.kind, s.url, s.language, s.user)
            for s in spans
            if s.kind not in _BLOCK_KINDS and s.start < end and s.end > start
        ]
        children = strip_edges(self._inlines(start, end, inline_spans, 0))
        return [Paragraph(children)] if children else []

    def _inlines(self, start: int, end: int, spans: list[Span], depth: int) -> tuple[Inline, ...]:
        ordered = sorted(spans, key=lambda s: (s.start, -s.end, s.kind not in _STYLES))
        nodes: list[Inline] = []
        cursor = start
        index = 0
        while index < len(ordered):
            span = ordered[index]
            if span.start < cursor:
                index += 1
                continue
            nodes.extend(_plain(self._text[cursor : span.start]))
            inner = [
                s for s in ordered[index + 1 :] if s.start < span.end and s.start >= span.start
            ]
            nodes.extend(self._inline(span, inner, depth))
            cursor = span.end
            index += 1
        nodes.extend(_plain(self._text[cursor:end]))
        return normalize_inlines(nodes)

    def _inline(self, span: Span, inner: list[Span], depth: int) -> list[Inline]:
        body = self._text[span.start : span.end]
        clipped = [
            Span(s.start, min(s.end, span.end), s.kind, s.url, s.language, s.user) for s in inner
        ]
        if depth >= MAX_NESTING:
            clipped = []

        def children() -> tuple[Inline, ...]:
            return self._inlines(span.start, span.end, clipped, depth + 1)

        kind = span.kind
        if kind in _STYLES:
            return [Styled(_STYLES[kind], children())]
        if kind == "code":
            return [Code(body)]
        if kind == "text_link":
            return [_link_or_mention(span.url, children(), self._directory)]
        if kind == "url":
            return [Link(body, (Text(body),))]
        if kind == "email":
            return [Link(f"mailto:{body}", (Text(body),))]
        if kind == "mention":
            username = body.lstrip("@")
            name = self._directory.name_for(body) or self._directory.name_for(username)
            return [Mention(MentionKind.USER, name or username, body)]
        if kind == "text_mention" and span.user is not None:
            user_id = str(span.user.get("id", ""))
            name = self._directory.name_for(user_id) or str(
                span.user.get("first_name") or span.user.get("username") or body
            )
            return [Mention(MentionKind.USER, name, user_id or None)]
        return list(children())


def _link_or_mention(url: str, children: tuple[Inline, ...], directory: Directory) -> Inline:
    match = re.fullmatch(r"tg://user\?id=(\d+)", url)
    if match:
        user_id = match.group(1)
        label = "".join(c.text for c in children if isinstance(c, Text)).lstrip("@")
        return Mention(MentionKind.USER, directory.name_for(user_id) or label or None, user_id)
    return Link(url, children)


def _plain(text: str) -> list[Inline]:
    nodes: list[Inline] = []
    for index, line in enumerate(text.split("\n")):
        if index:
            nodes.append(LineBreak())
        if line:
            nodes.append(Text(line))
    return nodes


def _outermost(spans: list[Span]) -> list[Span]:
    """Block spans not inside an earlier one, in order; later overlapping ones are dropped."""
    chosen: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end, s.kind != "protocol")):
        if not chosen or span.start >= chosen[-1].end:
            chosen.append(span)
    return chosen


_TAG_KINDS = {
    "b": "bold", "strong": "bold",
    "i": "italic", "em": "italic",
    "u": "underline", "ins": "underline",
    "s": "strikethrough", "strike": "strikethrough", "del": "strikethrough",
    "tg-spoiler": "spoiler",
    "code": "code", "pre": "pre",
    "a": "text_link",
    "blockquote": "blockquote",
}


class _TelegramHtmlReader(HTMLParser):
    """Reads Telegram HTML into visible text plus spans; unknown tags keep their text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._chunks: list[str] = []
        self._length = 0
        self._open: list[tuple[str, str, int, str, str]] = []
        self._spans: list[Span] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "br":
            self.handle_data("\n")
            return
        kind = _TAG_KINDS.get(tag)
        if tag == "span" and "tg-spoiler" in values.get("class", ""):
            kind = "spoiler"
        if kind is None:
            return
        language = ""
        class_name = values.get("class", "")
        if kind == "code" and class_name.startswith("language-"):
            language = class_name.removeprefix("language-")
            if self._open and self._open[-1][1] == "pre" and not self._open[-1][4]:
                pre_tag, _, pre_start, pre_url, _ = self._open[-1]
                self._open[-1] = (pre_tag, "pre", pre_start, pre_url, language)
        self._open.append((tag, kind, self._length, values.get("href", ""), language))

    def handle_endtag(self, tag: str) -> None:
        for index in range(len(self._open) - 1, -1, -1):
            if self._open[index][0] == tag:
                while len(self._open) > index:
                    self._close(self._open.pop())
                return

    def handle_data(self, data: str) -> None:
        self._chunks.append(data)
        self._length += len(data)

    def parse_marked_section(self, i: int, report: int = 1) -> int:
        """`<![…` : html.parser raises AssertionError unless a known keyword follows (`<![x`,
        `<![ `); read such a `<![` as the literal text it is."""
        try:
            return super().parse_marked_section(i, report)
        except AssertionError:
            self.handle_data(self.rawdata[i : i + 3])
            return i + 3

    def _close(self, entry: tuple[str, str, int, str, str]) -> None:
        _, kind, start, url, language = entry
        if self._length > start:
            self._spans.append(Span(start, self._length, kind, url=url, language=language))

    def result(self) -> tuple[str, list[Span]]:
        while self._open:
            self._close(self._open.pop())
        return "".join(self._chunks), self._spans
