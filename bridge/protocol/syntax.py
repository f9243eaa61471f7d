"""The lexical grammar of protocol text, shared by the parser and the builders.

Whitespace and line rules follow the reference (JavaScript) parser character for
character, because a bot on the other side of a chat reads our output with it:
JavaScript's `\\s` and `trim()` know U+FEFF but not U+0085, and its `.` stops at CR,
U+2028 and U+2029 as well as LF. Python's own classes differ, so they are spelled out.
"""

from __future__ import annotations

import re

FENCE = "```"

# JavaScript's WhiteSpace + LineTerminator set (what `\s` matches and `trim()` removes).
JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680"
    + "".join(chr(code) for code in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_WS = r"\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_WS_INLINE = _WS.replace(r"\n", "")
# Characters JavaScript's `.` refuses: a key line containing one after its value starts
# is not a key line at all, it continues the previous value.
_LINE_BREAKS = r"\n\r\u2028\u2029"

TYPE_NAMES = ("REQUEST", "RESPONSE", "CLARIFY", "HANDOFF", "BROADCAST")

# The skill dialect's header, exactly as the reference accepts it (whole first line).
SKILL_HEADER = re.compile(rf"\[([A-Za-z0-9_]++)[{_WS}]*+→[{_WS}]*+@([^{_WS}]+)\]")
# Any accepted header form: `→` or `->`, with or without `@` (matched on a stripped line).
ANY_HEADER = re.compile(
    rf"\[[{_WS}]*+([A-Za-z0-9_]++)[{_WS}]*+(?:→|->)[{_WS}]*+(@?)([^{_WS}]+)\]"
)
# Where an unfenced header may begin; confirmed afterwards on its whole line.
UNFENCED_HEADER_START = re.compile(
    rf"\[[{_WS_INLINE}]*+(?:{'|'.join(TYPE_NAMES)})[{_WS_INLINE}]*+(?:→|->)"
)
# A code-fence language tag such as ```text or ```yaml.
LANGUAGE_TAG = re.compile(r"[A-Za-z0-9_+#.-]{1,32}")
# A blank line ends an unfenced block (a fenced one ends at its closing fence).
BLANK_LINE = re.compile(rf"\n[{_WS_INLINE}]*+(?=\n|\Z)")

# `Key: value` at the very start of a line. The reference's keys are letters only; the
# `-`/`_` spellings are admitted here and filtered by `field_for_key` to known fields.
KEY_LINE = re.compile(
    rf"^([A-Za-z][A-Za-z_-]*+):[{_WS_INLINE}]*+[^{_LINE_BREAKS}]*+$", re.MULTILINE
)

ARTICLE_DEPTH = re.compile(rf"([0-9]++)[{_WS}]*+/[{_WS}]*+([0-9]++)")

# Lowercased key -> ProtocolMessage attribute, in both dialects. `originalfrom` and
# `expires` come from the article dialect but touch no field the reference reports.
FIELD_FOR_KEY: dict[str, str] = {
    "from": "from_",
    "requestid": "request_id",
    "task": "task",
    "result": "result",
    "context": "context",
    "depth": "depth",
    "callback": "callback",
    "priority": "priority",
    "status": "status",
    "question": "question",
    "message": "message",
    "originalfrom": "original_from",
    "expires": "expires",
}
# Article-dialect names for fields the skill dialect spells differently. Only honoured
# in article-form blocks: in a skill-form block they stay in `meta`, as the reference has it.
ARTICLE_FIELD_FOR_KEY: dict[str, str] = {
    **FIELD_FOR_KEY,
    "body": "result",
    "announcement": "message",
}
META = ""


def field_for_key(key: str, fields: dict[str, str]) -> str | None:
    """Attribute for `key`, `META` for an unknown key, `None` if the line is no key at all.

    A key spelled with `-` or `_` counts only when it names a known field, so an ordinary
    hyphenated word at the start of a continuation line stays part of the value.
    """
    lowered = key.lower()
    if "-" in key or "_" in key:
        return fields.get(lowered.replace("-", "").replace("_", ""))
    return fields.get(lowered, META)


def is_field_line(line: str) -> bool:
    """Whether `line` would start a new field inside a protocol block."""
    match = KEY_LINE.match(line)
    return match is not None and field_for_key(match.group(1), ARTICLE_FIELD_FOR_KEY) is not None
