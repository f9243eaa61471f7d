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

What differs: the output is compact and UTF-8 (`{"a":"ü"}`, not `{"a": "\\u00fc"}` — the
same JSON), NaN encodes as `null` (the standard library writes `NaN`, which is not JSON), and
an integer beyond 64 bits decodes as a float (no JavaScript peer can send one exactly).
Without orjson (a platform it has no wheel for) the standard library does it all.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; this is the fallback
    orjson = None  # type: ignore[assignment]

# Dates and dataclasses go to `default` (or fail) as with the standard library, instead of
# orjson's own rendering of them.
_OPTIONS = 0 if orjson is None else orjson.OPT_PASSTHROUGH_DATETIME | (
    orjson.OPT_PASSTHROUGH_DATACLASS
)


def dumps(value: Any, *, default: Callable[[Any], Any] | None = None) -> str:
    """Compact JSON text of `value`; `default` turns what JSON has no type for into what it has."""
    if orjson is not None:
        try:
            return orjson.dumps(value, default=default, option=_OPTIONS).decode()
        except TypeError:  # orjson.JSONEncodeError is one
            pass
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=default)


def loads(text: str | bytes) -> Any:
    """The value of JSON text; raises ValueError (or RecursionError) as `json.loads` does."""
    if orjson is not None:
        try:
            return orjson.loads(text)
        except ValueError:  # orjson.JSONDecodeError is one: the standard library decides
            pass
    return json.loads(text)
