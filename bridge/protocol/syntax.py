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

# The skill dialect's header, exactly as the reference accepts it (the whole first line of
# the trimmed fence content), matched in place at the start of the content: leading
# whitespace (what trimming drops), the header, then the line's end or nothing but
# whitespace up to the closing fence. Matching inside the text, instead of trimming a copy
# and splitting off its first line, is the same test without the copies.
SKILL_HEADER_IN_FENCE = re.compile(
    rf"[{_WS}]*+\[([A-Za-z0-9_]++)[{_WS_INLINE}]*+→[{_WS_INLINE}]*+@([^{_WS}]+)\]"
    rf"(?:(?=\n)|[{_WS}]*+\Z)"
)
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

# `Key:` at the very start of a line, where the rest of the line is one JavaScript "line"
# (no CR/U+2028/U+2029 once the value has begun) — else the line continues the previous
# value, as in the reference. Its keys are letters only; the two multi-word known fields
# may also be written with `-` or `_` (Request-Id, request_id, Original-From, ...).
# ASCII case folding only: Unicode folding would make `requeſt_id:` (long s) a key, and
# so cut short a value the reference reads as continuing. `FIELD_KEY` tests one line (the
# builders' check); the parser splits whole bodies on the `FIELD_SEPARATOR` forms below.
_KEY = r"([A-Za-z]++|(?i:request[-_]id|original[-_]from)):"
_REST_IS_ONE_LINE = rf"(?=[{_WS_INLINE}]*+[^{_LINE_BREAKS}]*+$)"
FIELD_KEY = re.compile(rf"^{_KEY}{_REST_IS_ONE_LINE}", re.MULTILINE | re.ASCII)
# The parser splits the block's body (which starts with a newline) on these instead of on
# FIELD_KEY: the same key lines, but a pattern that starts with a literal newline lets the
# regex engine jump from line to line rather than try `^` at every character (three times
# faster), and taking the blanks after the colon leaves most values with nothing to trim.
# Where the body holds no CR, U+2028 or U+2029 the one-line condition always holds, so the
# second pattern leaves it out. Splitting yields [preamble, key, value, key, value, ...].
FIELD_SEPARATOR = re.compile(
    rf"\n{_KEY}[{_WS_INLINE}]*+(?=[^{_LINE_BREAKS}]*+$)", re.MULTILINE | re.ASCII
)
FIELD_SEPARATOR_ONE_LINE = re.compile(rf"\n{_KEY}[{_WS_INLINE}]*+", re.ASCII)

# Key (lowercased, no `-`/`_`) -> ProtocolMessage attribute, in both dialects. `originalfrom` and
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


def _with_written_spellings(fields: dict[str, str]) -> dict[str, str]:
    """Add the capitalised spellings builders emit, so most keys need no normalising."""
    written = {"requestid": "RequestId", "originalfrom": "OriginalFrom"}
    spelled = dict(fields)
    for key, attribute in fields.items():
        spelled[written.get(key, key.capitalize())] = attribute
    return spelled


FIELD_FOR_KEY = _with_written_spellings(FIELD_FOR_KEY)
ARTICLE_FIELD_FOR_KEY = _with_written_spellings(ARTICLE_FIELD_FOR_KEY)


def attribute_for_key(key: str, fields: dict[str, str]) -> str:
    """The `ProtocolMessage` attribute a key fills, or `META` for an unknown key."""
    return fields.get(key.lower().replace("-", "").replace("_", ""), META)


def is_field_line(line: str) -> bool:
    """Whether `line` would start a new field inside a protocol block."""
    return FIELD_KEY.match(line) is not None
