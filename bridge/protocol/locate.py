"""Finding the protocol block inside a chat message.

Chat messages wrap protocol blocks in prose, language-tagged code fences, CRLF line
ends, or no fence at all. This module decides *which* text is the block and which
dialect it is written in; reading its fields is the parser's job.

Fences pair up exactly as in the reference parser: the first ``` opens, the next ```
closes (even inside a value). The first fenced block whose first line is a header
decides the outcome; only when no fenced block has one is an unfenced header looked for.
Every search below moves forward only, so the cost is linear in the text length.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from bridge.protocol.syntax import (
    ANY_HEADER,
    BLANK_LINE,
    FENCE,
    JS_WHITESPACE,
    LANGUAGE_TAG,
    SKILL_HEADER,
    UNFENCED_HEADER_START,
)


class Block(NamedTuple):
    """A located block: its span in the text, its header and the lines after the header.

    `skill_form` is true for a fenced block whose first line is `[TYPE → @Name]`: the
    reference library's exact dialect, read with its exact rules. Anything else is read
    as the more lenient article dialect.
    """

    start: int
    end: int
    type_name: str
    target: str
    target_has_at: bool
    body: str
    skill_form: bool


def find_block(text: str) -> tuple[int, int] | None:
    """Span `(start, end)` of the protocol block `parse` would read, fences included.

    The block may still fail validation (unknown type, missing fields); this only says
    where it is, so the relay can show or strip the text around it.
    """
    if not isinstance(text, str):
        return None
    block = locate_block(text)
    return None if block is None else (block.start, block.end)


def locate_block(text: str) -> Block | None:
    """The block `parse` reads, or `None` when the text holds no protocol header."""
    if FENCE in text:
        block = _first_fenced_block(text)
        if block is not None:
            return block
    if "[" in text:
        return _first_unfenced_block(text)
    return None


def _first_fenced_block(text: str) -> Block | None:
    opening = text.find(FENCE)
    while opening != -1:
        start = opening + len(FENCE)
        if text.startswith("\n", start):
            start += 1
        closing = text.find(FENCE, start)
        end = closing if closing != -1 else len(text)
        block_end = closing + len(FENCE) if closing != -1 else end
        block = None
        if text.find("[", start, end) != -1:  # no header without a bracket
            block = _read_fenced(text[start:end], opening, block_end, closed=closing != -1)
        if block is not None or closing == -1:
            return block
        opening = text.find(FENCE, block_end)
    return None


def _read_fenced(content: str, start: int, end: int, *, closed: bool) -> Block | None:
    trimmed = content.strip(JS_WHITESPACE)
    first_line, rest = _split_first_line(trimmed)
    if closed:
        skill = SKILL_HEADER.fullmatch(first_line)
        if skill is not None:
            return Block(start, end, skill.group(1), skill.group(2), True, rest, True)
    header = ANY_HEADER.fullmatch(first_line.strip(JS_WHITESPACE))
    if header is None and LANGUAGE_TAG.fullmatch(first_line.strip(JS_WHITESPACE)):
        first_line, rest = _split_first_line(rest.lstrip(JS_WHITESPACE))
        header = ANY_HEADER.fullmatch(first_line.strip(JS_WHITESPACE))
    if header is None:
        return None
    return _article_block(header, start, end, rest)


def _first_unfenced_block(text: str) -> Block | None:
    position = 0
    while True:
        candidate = UNFENCED_HEADER_START.search(text, position)
        if candidate is None:
            return None
        line_start = text.rfind("\n", position, candidate.start()) + 1 or position
        line_end = text.find("\n", candidate.start())
        if line_end == -1:
            line_end = len(text)
        if not text[line_start : candidate.start()].strip(JS_WHITESPACE):
            line = text[line_start:line_end].strip(JS_WHITESPACE)
            header = ANY_HEADER.fullmatch(line)
            if header is not None:
                end = _unfenced_block_end(text, line_end)
                return _article_block(header, line_start, end, text[line_end + 1 : end])
        # A header must begin its line, so nothing further on this line can be one.
        position = line_end + 1
        if position >= len(text):
            return None


def _unfenced_block_end(text: str, header_end: int) -> int:
    blank = BLANK_LINE.search(text, header_end)
    fence = text.find(FENCE, header_end)
    ends = [len(text)]
    if blank is not None:
        ends.append(blank.start())
    if fence != -1:
        ends.append(fence)
    return min(ends)


def _article_block(header: re.Match[str], start: int, end: int, body: str) -> Block:
    # Article-dialect blocks are often pasted with CRLF line ends; read them as LF.
    return Block(
        start,
        end,
        header.group(1),
        header.group(3),
        header.group(2) == "@",
        body.replace("\r\n", "\n"),
        False,
    )


def _split_first_line(text: str) -> tuple[str, str]:
    newline = text.find("\n")
    if newline == -1:
        return text, ""
    return text[:newline], text[newline + 1 :]
