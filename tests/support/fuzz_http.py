"""Fuzzing an HTTP entry over a real socket: what anyone on the network may send.

Hypothesis draws the requests (headers and bodies); the test sends every one with aiohttp to
the running route and collects the answers, so a failure names the request that got a 5xx.
The drawing runs in a plain function (`draw`), derandomized, so the async test that sends
them keeps its own event loop and fixtures, and a failure repeats on the next run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
import yarl
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

T = TypeVar("T")

DEEP = 100_000
"""Nesting of the deepest bodies sent: far past any recursive parser's stack."""

HEADER_TEXT = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x10FFFF,
                  blacklist_categories=("Cs",), blacklist_characters="\x7f"),
    max_size=60,
)
"""Header values a client can put on the wire (no control characters, no line breaks)."""

HUGE_DIGITS = st.integers(min_value=11, max_value=5000).map(lambda n: "9" * n)
"""Digit strings far too long for a timestamp: `int()` takes them, a float does not."""

header_values = st.one_of(
    HEADER_TEXT, HUGE_DIGITS, st.just(""), st.just("-1"), st.just("1e999"),
    st.just("NaN"), st.integers().map(str), st.just("٣٤٥"),  # Arabic-Indic digits
)

_json_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-10**400, max_value=10**400),
    st.floats(allow_nan=False), st.text(max_size=20),
)
json_values = st.recursive(
    _json_leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12,
)

FIXED_BODIES: tuple[bytes, ...] = (
    b"", b"not json", b"{", b"[]", b"null", b"42", b'"text"', b"1" * 5000, b"1e999999",
    b'{"a": 1e999999}', b"\xff\xfe\x00", b"[" * DEEP, b"[" * DEEP + b"]" * DEEP,
    b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    b"payload=" + b"%5B" * DEEP, b"payload=not+json", b"payload=%5B1%5D",
)
"""The bodies every entry gets, whatever Hypothesis draws besides."""

bodies = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda value: json.dumps(value).encode()),
    st.integers(min_value=1, max_value=DEEP).map(lambda n: b"[" * n + b"]" * n),
    st.sampled_from(FIXED_BODIES),
)


def draw(strategy: st.SearchStrategy[T], count: int) -> list[T]:
    """`count` examples of `strategy`, the same ones on every run."""
    found: list[T] = []

    @settings(max_examples=count, database=None, derandomize=True, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), deadline=None)
    @given(strategy)
    def collect(example: T) -> None:
        found.append(example)

    collect()
    return found


@dataclass
class Answers:
    """What the entry answered to each request."""

    statuses: list[tuple[int, Any]] = field(default_factory=list)

    def server_errors(self) -> list[tuple[int, Any]]:
        return [(status, request) for status, request in self.statuses if status >= 500]


async def post_each(
    session: aiohttp.ClientSession, url: str,
    requests: Sequence[tuple[dict[str, str], bytes]], *, allowed: frozenset[int] = frozenset(),
) -> Answers:
    """POST every (headers, body); `allowed` are 5xx statuses the entry may answer by design
    (503 "not ready"). A request is described by its headers and body's first 80 bytes."""
    return await send_each(session, "POST", url, requests, allowed=allowed)


async def send_each(
    session: aiohttp.ClientSession, method: str, url: str | yarl.URL,
    requests: Sequence[tuple[dict[str, str], bytes]], *, allowed: frozenset[int] = frozenset(),
) -> Answers:
    """`post_each` for any method (a GET may carry a body too) and any URL."""
    answers = Answers()
    for headers, body in requests:
        async with session.request(method, url, data=body, headers=headers,
                                   allow_redirects=False) as response:
            await response.read()
            status = response.status
        if status not in allowed:
            answers.statuses.append((status, (method, str(url), headers, body[:80])))
    return answers


def loud_lines(records: Sequence[logging.LogRecord], *loggers: str) -> list[logging.LogRecord]:
    """Records at warning level or above from `loggers` (and aiohttp's own server log)."""
    names = (*loggers, "aiohttp.server", "aiohttp.web")
    return [r for r in records if r.levelno >= logging.WARNING and r.name.startswith(names)]
