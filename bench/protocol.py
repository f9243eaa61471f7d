"""Throughput of the protocol parser and builder (prints figures; asserts nothing).

Run: python bench/protocol.py [--seconds 1.0]

Cases: a typical ~250-byte REQUEST, a 2 KB chat message with that block in the middle,
and a plain chat line (the common case, which should be rejected almost for free).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bridge.protocol import build_request, parse

TYPICAL_REQUEST = build_request(
    to="Mantis",
    from_="Lotbot",
    request_id="lotbot-abc123",
    task="Check the Mac Mini CLI version and report whether it is outdated compared to "
    "the latest stable",
    context="Running the weekly system audit for the team",
    priority="normal",
)
_PROSE = "Morning all, quick update on the deploy: the build is green and canaries look fine. "
_PADDING = (_PROSE * 12)[: (2048 - len(TYPICAL_REQUEST)) // 2]
CHAT_WITH_BLOCK = f"{_PADDING}\n{TYPICAL_REQUEST}\n{_PADDING}"
PLAIN_CHAT = "hey folks, did anyone see the deploy go out? looks like the build is green now"


def rate(operation: Callable[[], object], seconds: float) -> float:
    """Calls per CPU second: best of three batches sized to about `seconds / 3` each.

    CPU time of this process (not wall time) keeps the figure honest on a busy machine.
    """
    calls = 1
    while True:
        started = time.process_time()
        for _ in range(calls):
            operation()
        elapsed = time.process_time() - started
        if elapsed > 0.05:
            break
        calls *= 4
    batch = max(1, int(calls * (seconds / 3) / elapsed))
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        for _ in range(batch):
            operation()
        best = min(best, time.process_time() - started)
    return batch / best


def main() -> int:
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("--seconds", type=float, default=1.5, help="time budget per case")
    seconds = arguments.parse_args().seconds
    assert parse(TYPICAL_REQUEST) is not None and parse(CHAT_WITH_BLOCK) is not None

    cases: list[tuple[str, Callable[[], object]]] = [
        (f"parse REQUEST ({len(TYPICAL_REQUEST.encode())} B)", lambda: parse(TYPICAL_REQUEST)),
        (
            f"parse chat message with block ({len(CHAT_WITH_BLOCK.encode())} B)",
            lambda: parse(CHAT_WITH_BLOCK),
        ),
        (f"parse plain chat line ({len(PLAIN_CHAT.encode())} B)", lambda: parse(PLAIN_CHAT)),
        (
            "build REQUEST (given request id)",
            lambda: build_request(
                to="Mantis", from_="Lotbot", request_id="lotbot-abc123",
                task="Check the Mac Mini CLI version", context="Weekly audit", priority="normal",
            ),
        ),
        (
            "build REQUEST (generated request id)",
            lambda: build_request(to="Mantis", from_="Lotbot", task="Check the CLI version"),
        ),
    ]
    print(f"bcn-bridge protocol benchmark, Python {sys.version.split()[0]}, one core")
    for name, operation in cases:
        print(f"  {name:<46} {rate(operation, seconds):>12,.0f} /s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
