"""Recognise text-protocol blocks so every conversion can leave them untouched.

Only the shape matters here (a fence whose first line is `[TYPE → @Name]`); reading the fields
is bridge/protocol's job. Bots on the platforms parse these blocks from the raw text, so a
single changed byte (an escaped `_`, a resolved `@Name`, dropped fences) breaks them.
"""

from __future__ import annotations

import re

_TYPES = r"(?i:REQUEST|RESPONSE|CLARIFY|HANDOFF|BROADCAST)"
_HEADER = rf"[ \t]*\[[ \t]*{_TYPES}[ \t]*(?:→|->)[^\]\n]*\][ \t]*"

PROTOCOL_HEADER = re.compile(rf"\A{_HEADER}\Z")

_FENCED_BLOCK = re.compile(
    rf"^(?P<fence>`{{3,}}|~{{3,}})[^\n]*\n{_HEADER}"
    r"(?:(?:\n[^\n]*?)*?\n(?P=fence)[`~]*[ \t]*(?=\n|\Z)|(?:\n[^\n]*)*\Z)",
    re.MULTILINE,
)


def is_protocol_header(line: str) -> bool:
    """Whether a line is a protocol header such as `[REQUEST → @Mantis]`."""
    return PROTOCOL_HEADER.match(line) is not None


def find_protocol_blocks(text: str) -> list[tuple[int, int]]:
    """Character spans of fenced protocol blocks in raw text, fences included."""
    return [match.span() for match in _FENCED_BLOCK.finditer(text)]
