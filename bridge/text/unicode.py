"""Valid Unicode at the door: lone UTF-16 surrogates become U+FFFD, once, where text enters.

A Python `str` may hold a lone surrogate (U+D800-U+DFFF) that no UTF-8 writer accepts:
`json.loads('"\\ud800"')` returns one, so do YAML's `"\\ud800"`, a platform library that
parses its own JSON, and a bot's final. Every socket write, every SQLite parameter and every
log line that meets such a string raises `UnicodeEncodeError` — far from where the text came
in, in a writer task that then stops (issue 31). So each door through which text enters
(`bridge.fastjson.loads`, the config loader, `Inbound`) passes it through `valid_unicode`,
and nothing past the doors has to think about it. See docs/text.md, "Valid Unicode".

A surrogate *pair* in a `str` (two code points, as `surrogatepass` decoding leaves them)
becomes the one character it encodes, as every UTF-16 reader would read it; only the lone
halves are replaced.

This is on the hot path (every frame's every string), so text that is already valid — all
of it, nearly always — is returned as it is, the same object: ASCII costs one flag check,
other text one UTF-8 encode in C (about 0.5-0.7 µs for 500 characters; docs/text.md).
"""

from __future__ import annotations

from typing import Any

REPLACEMENT = "\ufffd"
"""What a lone surrogate becomes: U+FFFD REPLACEMENT CHARACTER."""


def valid_unicode(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD; `text` itself when it has none."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 round trip: pairs join into their character, lone halves become U+FFFD.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def valid_unicode_in(value: Any) -> Any:
    """`value` (a decoded JSON or YAML document) with `valid_unicode` applied to every string
    in it, keys included; containers whose strings were all valid are returned as they are.

    A dict, list or tuple is rebuilt (as a plain dict, list or tuple) only where something
    in it changed. Anything else (numbers, None, dates) passes through untouched.
    """
    if isinstance(value, str):
        return valid_unicode(value)
    if isinstance(value, dict):
        pairs = [(valid_unicode_in(k), valid_unicode_in(v)) for k, v in value.items()]
        if all(k is old_k and v is old_v
               for (k, v), (old_k, old_v) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if isinstance(value, list | tuple):
        items = [valid_unicode_in(item) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value
