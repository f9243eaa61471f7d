"""JSON for the hot path: orjson where it is installed, the standard library's rules kept.

Every frame on every socket, and most rows the hub and the relay store write, are JSON: with
the standard library that was 7% of the bridge's CPU per relayed message and 14% of a hub's
of its own (bench/relay.py, a CPU profile of each). orjson encodes the same objects about ten
times, and decodes them about three times, faster. What it refuses, the standard library
still does, so nothing that worked before fails now:

- encoding: lone surrogates, integers beyond 64 bits, keys that are not strings and types
  orjson does not know go to `json.dumps` (which encodes them, or raises, as before);
- decoding: NaN and Infinity, escaped lone surrogates and nesting deeper than 1,024 levels
  go to `json.loads` (which answers, or raises, as before).

Valid Unicode in, valid Unicode out (docs/text.md, "Valid Unicode"): this is the door
nearly every frame enters by (a bot's `/ws/bot` frames, a page's webchat frames, the
bridge-hub link), so a lone surrogate — `"\\ud800"` is ASCII on the wire and valid JSON —
is made U+FFFD here (`bridge.text.unicode`), once, and no writer past it ever meets one.
`dumps` does the same to what it is given (a string that entered some other way), so what
it writes can always be sent.

What differs: the output is compact and UTF-8 (`{"a":"ü"}`, not `{"a": "\\u00fc"}` — the
same JSON), NaN encodes as `null` (the standard library writes `NaN`, which is not JSON), and
an integer beyond 64 bits decodes as a float (no JavaScript peer can send one exactly).
Without orjson (a platform it has no wheel for) the standard library does it all.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from bridge.text.unicode import valid_unicode, valid_unicode_in

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; this is the fallback
    orjson = None  # type: ignore[assignment]

# Dates and dataclasses go to `default` (or fail) as with the standard library, instead of
# orjson's own rendering of them.
_OPTIONS = 0 if orjson is None else orjson.OPT_PASSTHROUGH_DATETIME | (
    orjson.OPT_PASSTHROUGH_DATACLASS
)


def dumps(value: Any, *, default: Callable[[Any], Any] | None = None,
          sort_keys: bool = False) -> str:
    """Compact JSON text of `value`; `default` turns what JSON has no type for into what it has.
    `sort_keys`: objects' keys in order, so equal values give equal text (a fingerprint).

    Always valid Unicode: a lone surrogate in a string of `value` is written as U+FFFD.
    """
    if orjson is not None:
        options = _OPTIONS | orjson.OPT_SORT_KEYS if sort_keys else _OPTIONS
        try:
            return orjson.dumps(value, default=default, option=options).decode()
        except TypeError:  # orjson.JSONEncodeError is one
            pass
    # Unescaped (ensure_ascii=False), a surrogate can only sit inside a string of the JSON
    # text, so replacing it there is replacing it in that string.
    return valid_unicode(json.dumps(value, ensure_ascii=False, separators=(",", ":"),
                                    default=default, sort_keys=sort_keys))


def loads(text: str | bytes) -> Any:
    """The value of JSON text; raises ValueError (or RecursionError) as `json.loads` does.

    Every string in it is valid Unicode: a lone surrogate, escaped or raw, reads as U+FFFD.
    """
    if orjson is not None:
        try:
            return orjson.loads(text)  # refuses lone surrogates: what it reads is valid
        except ValueError:  # orjson.JSONDecodeError is one: the standard library decides
            pass
    return valid_unicode_in(json.loads(text))
