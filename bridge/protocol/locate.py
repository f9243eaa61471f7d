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
    SKILL_HEADER_IN_FENCE,
    UNFENCED_HEADER_START,
)


class Block(NamedTuple):
    """A located block: its span in the text, its header and the lines after the header.

    `body` starts with the newline that ends the header line (when anything follows the
    header), so every field line in it follows a newline.

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
    """The block `parse` reads, or `None` when the text holds no protocol header.

    The fenced blocks come first, in order; the loop is written out here (not in a helper)
    because it runs on every parse and a Python call costs as much as a check.
    """
    opening = text.find(FENCE)
    while opening != -1:
        start = opening + 3  # len(FENCE)
        if text.startswith("\n", start):
            start += 1
        closing = text.find(FENCE, start)
        if closing == -1:
            # An unclosed final fence runs to the end of the text (article dialect only).
            if text.find("[", start) != -1:
                block = _read_article_fenced(text[start:], opening, len(text))
                if block is not None:
                    return block
            break
        # The common case, a reference-style block, is recognised in place.
        skill = SKILL_HEADER_IN_FENCE.match(text, start, closing)
        if skill is not None:
            body = text[skill.end() : closing]
            # tuple.__new__ skips the Python-level NamedTuple constructor (half its cost).
            return tuple.__new__(
                Block, (opening, closing + 3, skill[1], skill[2], True, body, True)
            )
        block_end = closing + 3
        if text.find("[", start, closing) != -1:  # no header without a bracket
            block = _read_article_fenced(text[start:closing], opening, block_end)
            if block is not None:
                return block
        opening = text.find(FENCE, block_end)
    if "[" in text:
        return _first_unfenced_block(text)
    return None


def _read_article_fenced(content: str, start: int, end: int) -> Block | None:
    first_line, rest = _split_first_line(content.strip(JS_WHITESPACE))
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
        "\n" + body.replace("\r\n", "\n"),
        False,
    )


def _split_first_line(text: str) -> tuple[str, str]:
    newline = text.find("\n")
    if newline == -1:
        return text, ""
    return text[:newline], text[newline + 1 :]
