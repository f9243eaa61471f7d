"""Splitting rendered text into parts that each fit a platform's length limit.

Every part must be valid markup on its own, so the rendered text is read as a sequence of atoms
(characters; for HTML also tags and entities) with the markup context open before each one: the
code fence for the line dialects, the stack of open tags for HTML. A part that ends inside a
context closes it and the next part reopens it. Cuts prefer, in order, a paragraph break, a line
break, a space, a grapheme boundary, in the later half of the room available; a cut never falls
inside a protocol block that would fit in a part of its own, nor inside a fence line or a tag.
"""

from __future__ import annotations

import bisect
import html
import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from bridge.text.platforms import PLATFORM_LIMITS, Platform, platform_named, utf16_length
from bridge.text.protocol_blocks import find_protocol_blocks

MIN_LIMIT = 16
"""Below this no part could carry a reopened fence or tag and still make progress."""

_HTML_TOKEN = re.compile(r"<[a-zA-Z/][^<>]*>|&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|\w{1,32});|[\s\S]")
_TAG_NAME = re.compile(r"</?([a-zA-Z][\w-]*)")
_FENCE = "```"
_PREFORMATTED_TAGS = frozenset({"pre", "code"})
_VOID_TAGS = frozenset({"br", "hr", "img", "wbr"})

# Boundary ranks, best first.
_PARAGRAPH, _LINE, _WORD, _GRAPHEME, _CODE_POINT = 4, 3, 2, 1, 0


@dataclass(frozen=True)
class _Atom:
    raw: str
    visible: str
    weight: int
    opens: str = ""
    closes: str = ""


@dataclass(frozen=True)
class _Context:
    """The markup open before an atom: fence opener line, or open tags as (name, raw) pairs."""

    fence: str = ""
    tags: tuple[tuple[str, str], ...] = ()
    in_delimiter: bool = False

    @property
    def preformatted(self) -> bool:
        return bool(self.fence) or any(name in _PREFORMATTED_TAGS for name, _ in self.tags)

    def reopen(self) -> str:
        if self.fence:
            return self.fence + "\n"
        return "".join(raw for _, raw in self.tags)

    def close(self) -> str:
        if self.fence:
            return "\n" + _FENCE
        return "".join(f"</{name}>" for name, _ in reversed(self.tags))


def length_on(text: str, platform: str) -> int:
    """How long `text` is by the platform's own count (Telegram: UTF-16 units, tags excluded)."""
    target = platform_named(platform)
    return sum(atom.weight for atom in _atoms(str(text), target))


def split_for(
    rendered: str,
    platform: str,
    limit: int | None = None,
    *,
    marker: bool = False,
) -> list[str]:
    """Split rendered text into parts within the platform's limit (or `limit`).

    With `marker=True` each part of a multi-part result ends in a line `(k/n)`, counted within
    the limit. Empty text gives no parts.
    """
    target = platform_named(platform)
    ceiling = PLATFORM_LIMITS[target] if limit is None else limit
    if not isinstance(ceiling, int) or isinstance(ceiling, bool) or ceiling < MIN_LIMIT:
        raise ValueError(f"limit must be an integer of at least {MIN_LIMIT}, got {limit!r}")
    text = str(rendered)
    if not text.strip():
        return []
    atoms = _atoms(text, target)
    contexts = _contexts(atoms, target)
    if not marker:
        return _Splitter(atoms, contexts, target, ceiling).parts()
    digits = 1
    while True:
        reserve = length_on(f"\n({'9' * digits}/{'9' * digits})", target)
        parts = _Splitter(atoms, contexts, target, ceiling - reserve).parts()
        if len(parts) == 1:
            return parts
        if len(str(len(parts))) <= digits:
            total = len(parts)
            return [f"{part}\n({number}/{total})" for number, part in enumerate(parts, 1)]
        digits += 1


def _is_html(platform: Platform) -> bool:
    return platform in (Platform.TELEGRAM, Platform.WEBCHAT)


def _atoms(text: str, platform: Platform) -> list[_Atom]:
    if not _is_html(platform):
        return [_Atom(char, char, 1) for char in text]
    counts_markup = platform is not Platform.TELEGRAM
    atoms: list[_Atom] = []
    for token in _HTML_TOKEN.findall(text):
        if len(token) > 1 and token[0] == "<":
            name = _TAG_NAME.match(token)
            tag = name.group(1).lower() if name else ""
            weight = len(token) if counts_markup else 0
            if tag in _VOID_TAGS or token.endswith("/>"):
                atoms.append(_Atom(token, "", weight))
            elif token.startswith("</"):
                atoms.append(_Atom(token, "", weight, closes=tag))
            else:
                atoms.append(_Atom(token, "", weight, opens=tag))
            continue
        visible = html.unescape(token) if token[0] == "&" else token
        weight = len(token) if counts_markup else utf16_length(visible)
        atoms.append(_Atom(token, visible, weight))
    return atoms


def _contexts(atoms: Sequence[_Atom], platform: Platform) -> list[_Context]:
    """The context open before each atom, plus one for the end."""
    if _is_html(platform):
        return _tag_contexts(atoms)
    return _fence_contexts("".join(atom.raw for atom in atoms))


def _tag_contexts(atoms: Sequence[_Atom]) -> list[_Context]:
    contexts: list[_Context] = []
    stack: tuple[tuple[str, str], ...] = ()
    for atom in atoms:
        contexts.append(_Context(tags=stack))
        if atom.opens:
            stack = (*stack, (atom.opens, atom.raw))
        elif atom.closes:
            names = [name for name, _ in stack]
            if atom.closes in names:
                stack = stack[: len(names) - 1 - names[::-1].index(atom.closes)]
    contexts.append(_Context(tags=stack))
    return contexts


def _fence_contexts(text: str) -> list[_Context]:
    contexts: list[_Context] = []
    fence = ""
    for line in text.split("\n"):
        stripped = line.strip()
        opens = not fence and stripped.startswith(_FENCE) and not (
            len(stripped) > 2 * len(_FENCE) and stripped.endswith(_FENCE)
        )
        closes = bool(fence) and (stripped.startswith(_FENCE) or stripped.endswith(_FENCE))
        delimiter = _Context(fence=fence, in_delimiter=True)
        contexts.extend([delimiter] * len(line) if opens or closes else
                        [_Context(fence=fence)] * len(line))
        if opens:
            fence = stripped
        elif closes:
            fence = ""
        contexts.append(_Context(fence=fence, in_delimiter=opens or closes))
    contexts[-1] = _Context(fence=fence)
    return contexts


class _Splitter:
    def __init__(
        self,
        atoms: Sequence[_Atom],
        contexts: Sequence[_Context],
        platform: Platform,
        limit: int,
    ) -> None:
        self._atoms = atoms
        self._contexts = contexts
        self._platform = platform
        self._limit = limit
        self._totals = list(itertools.accumulate((atom.weight for atom in atoms), initial=0))
        self._close_weights: dict[_Context, int] = {}
        visible = "".join(atom.visible or "\x00" for atom in atoms)
        self._guarded = self._protected_positions(visible)

    def _weigh(self, raw: str) -> int:
        return sum(atom.weight for atom in _atoms(raw, self._platform))

    def _protected_positions(self, visible: str) -> set[int]:
        """Cut positions inside protocol blocks that would fit in a part of their own."""
        guarded: set[int] = set()
        for start, end in find_protocol_blocks(visible):
            if self._totals[end] - self._totals[start] <= self._limit:
                guarded.update(range(start + 1, end))
        return guarded

    def parts(self) -> list[str]:
        parts: list[str] = []
        position = self._skip_separator(0, self._contexts[0])
        while position < len(self._atoms):
            part, position = self._next_part(position)
            if part.strip():
                parts.append(part)
        return parts

    def _next_part(self, start: int) -> tuple[str, int]:
        opening = self._contexts[start]
        prefix = opening.reopen()
        room = self._limit - self._weigh(prefix)
        farthest = self._farthest_end(start, room)
        cut = self._choose_cut(start, farthest, room) if farthest > start else None
        if cut is None:
            return self._unformatted_part(start)
        closing = self._contexts[cut]
        body_end = cut
        if closing.fence and self._atoms[cut - 1].visible == "\n":
            body_end -= 1
        elif not closing.preformatted:
            while body_end > start and self._atoms[body_end - 1].visible.isspace():
                body_end -= 1
        body = "".join(atom.raw for atom in self._atoms[start:body_end])
        return prefix + body + closing.close(), self._skip_separator(cut, closing)

    def _farthest_end(self, start: int, room: int) -> int:
        # The running totals only grow: a binary search, not a walk through the part.
        end = bisect.bisect_right(self._totals, self._totals[start] + room) - 1
        return max(start, min(end, len(self._atoms)))

    def _closing_weight(self, context: _Context) -> int:
        weight = self._close_weights.get(context)
        if weight is None:
            weight = self._close_weights[context] = self._weigh(context.close())
        return weight

    def _fits(self, start: int, cut: int, room: int) -> bool:
        closing = self._closing_weight(self._contexts[cut])
        return self._totals[cut] - self._totals[start] + closing <= room

    def _allowed(self, start: int, cut: int, room: int) -> bool:
        return (
            cut not in self._guarded
            and not self._contexts[cut].in_delimiter
            and not self._atoms[cut - 1].opens
            and self._fits(start, cut, room)
        )

    def _choose_cut(self, start: int, farthest: int, room: int) -> int | None:
        """The latest cut in the later half of the room with the best boundary, found by
        walking back from the farthest cut and stopping at the first paragraph break: the
        work per part is the distance to that break, not the size of the part."""
        if farthest == len(self._atoms) and self._fits(start, farthest, room):
            return farthest
        halfway = start + (farthest - start) // 2
        latest: dict[int, int] = {}
        """rank -> the latest allowed cut of that rank in the later half."""
        for cut in range(farthest, halfway, -1):
            if not self._allowed(start, cut, room):
                continue
            rank = self._rank(cut)
            latest.setdefault(rank, cut)
            if rank == _PARAGRAPH:
                break
        for wanted in (_PARAGRAPH, _LINE, _WORD, _GRAPHEME):
            found = [cut for rank, cut in latest.items() if rank >= wanted]
            if found:
                return max(found)
        # No boundary in the later half (one endless grapheme run): the best anywhere.
        candidates = [
            (self._rank(cut), cut) for cut in range(farthest, start, -1)
            if self._allowed(start, cut, room)
        ]
        return max(candidates)[1] if candidates else None

    def _rank(self, cut: int) -> int:
        before = self._atoms[cut - 1].visible
        if cut < len(self._atoms) and self._atoms[cut].closes:
            return _CODE_POINT
        if before == "\n":
            previous = self._atoms[cut - 2].visible if cut >= 2 else ""
            outside = not self._contexts[cut].fence and not self._contexts[cut].tags
            return _PARAGRAPH if outside and (previous == "\n" or self._is_webchat) else _LINE
        if before.isspace():
            return _WORD
        return _GRAPHEME if self._grapheme_boundary(cut) else _CODE_POINT

    @property
    def _is_webchat(self) -> bool:
        return self._platform is Platform.WEBCHAT

    def _grapheme_boundary(self, cut: int) -> bool:
        if cut >= len(self._atoms):
            return True
        before, after = self._atoms[cut - 1].visible, self._atoms[cut].visible
        return not (_continues_grapheme(after) or before == "\u200d" or
                    (_regional(before) and _regional(after) and self._odd_regionals(cut)))

    def _odd_regionals(self, cut: int) -> bool:
        count = 0
        index = cut - 1
        while index >= 0 and _regional(self._atoms[index].visible):
            count += 1
            index -= 1
        return count % 2 == 1

    def _skip_separator(self, position: int, context: _Context) -> int:
        if context.preformatted:
            return position
        while position < len(self._atoms) and self._atoms[position].visible.isspace():
            position += 1
        return position

    def _unformatted_part(self, start: int) -> tuple[str, int]:
        """Markup too deep to reopen within the limit: carry on as escaped visible text."""
        pieces: list[str] = []
        used = 0
        position = start
        while position < len(self._atoms):
            atom = self._atoms[position]
            raw = html.escape(atom.visible, quote=False) if _is_html(self._platform) else atom.raw
            weight = self._weigh(raw)
            if used + weight > self._limit and pieces:
                break
            pieces.append(raw)
            used += weight
            position += 1
        return "".join(pieces), position


def _continues_grapheme(char: str) -> bool:
    if not char:
        return False
    code = ord(char)
    return (
        unicodedata.category(char) in ("Mn", "Me", "Mc")
        or code == 0x200D
        or 0xFE00 <= code <= 0xFE0F
        or 0x1F3FB <= code <= 0x1F3FF
        or 0xE0020 <= code <= 0xE007F
        or 0xE0100 <= code <= 0xE01EF
    )


def _regional(char: str) -> bool:
    return len(char) == 1 and 0x1F1E6 <= ord(char) <= 0x1F1FF
