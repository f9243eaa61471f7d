"""Any person's name as a header target: `[RESPONSE → @Ada%20Lovelace]`.

A header names its target in one run of non-blank characters, so a bot can be `@Mantis` but
a person called "Ada Lovelace" cannot be written as is — and most people on Slack and
Telegram have such a name. Writing the characters a header cannot hold as `%XX` (the UTF-8
bytes, as in a URL) keeps the block readable by every parser, the reference's included
(it reads the target `Ada%20Lovelace`), and ours reads the name back exactly.

Only the canonical form is decoded: a target is read as encoded when encoding what it
decodes to gives it back byte for byte. A bot that is really called `50%off` or `a%41` keeps
its name, because `encode_name` would never write either of them.
"""

from __future__ import annotations

import re

from bridge.protocol.syntax import JS_WHITESPACE

# Blanks end the target; `[`/`]` would confuse the header; ``` would close the block; `%`
# is the escape itself.
_UNSAFE = frozenset(JS_WHITESPACE) | frozenset("%`[]")
_UNSAFE_CHARACTER = re.compile("[" + re.escape("".join(sorted(_UNSAFE))) + "]")
_ESCAPES = re.compile(r"(?:%[0-9A-F]{2})+")


def encode_name(name: str) -> str:
    """`name` as a header target: every character a target cannot hold written as `%XX`."""
    if _UNSAFE_CHARACTER.search(name) is None:
        return name
    return _UNSAFE_CHARACTER.sub(_escaped, name)


def decode_name(target: str) -> str:
    """The name a header target stands for (the target itself unless canonically encoded)."""
    if "%" not in target:
        return target
    try:
        name = _ESCAPES.sub(_unescaped, target)
    except UnicodeDecodeError:
        return target
    return name if encode_name(name) == target else target


def _escaped(match: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group().encode("utf-8", "surrogatepass"))


def _unescaped(match: re.Match[str]) -> str:
    escapes = match.group()
    return bytes.fromhex(escapes.replace("%", "")).decode("utf-8", "surrogatepass")
