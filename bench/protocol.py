"""Throughput of the protocol parser and builder, beside the reference parser's (prints figures).

Run: python bench/protocol.py [--seconds 1.5] [--reference-checkout DIR] [--no-reference]
     [--profile]

Cases: a typical ~250-byte REQUEST, a 2 KB chat message with that block in the middle,
and a plain chat line (the common case, which should be rejected almost for free).

In the same run the reference JavaScript parser (L0T-B0T/bot-protocol v0.1, whose
behaviour ours follows) parses the same three texts under Node, timed with the same
method: calls per CPU second of its own process, best of three batches. It comes from the
npm registry (installed into a temp-directory cache), or from a checkout of its repository
named with --reference-checkout. When it cannot be run the bench says why and prints only
our figures. --profile adds a cProfile of our parser on the typical REQUEST.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.reference.node_parser import ReferenceUnavailable, reference_rates
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


PARSE_CASES = {
    f"parse REQUEST ({len(TYPICAL_REQUEST.encode())} B)": TYPICAL_REQUEST,
    f"parse chat message with block ({len(CHAT_WITH_BLOCK.encode())} B)": CHAT_WITH_BLOCK,
    f"parse plain chat line ({len(PLAIN_CHAT.encode())} B)": PLAIN_CHAT,
}
TARGET_CASE = next(iter(PARSE_CASES))
TARGET_RATIO = 0.6


def reference_view(text: str) -> dict[str, object] | None:
    """The fields the reference parser must return for `text` (ours agree with it on these)."""
    message = parse(text)
    if message is None:
        return None
    fields = message.to_dict()
    return {key: fields[name] for key, name in (
        ("type", "type"), ("to", "to"), ("from", "from"), ("requestId", "request_id"),
        ("task", "task"),
    )}  # fmt: skip


def profile_parse(calls: int = 100_000) -> None:
    """Where a parse of the typical REQUEST spends its time (cProfile, by own time)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        parse(TYPICAL_REQUEST)
    profiler.disable()
    print(f"\ncProfile of {calls:,} parses of the typical REQUEST (by own time):")
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(12)


def main() -> int:
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("--seconds", type=float, default=1.5, help="time budget per case")
    arguments.add_argument(
        "--reference-checkout", type=Path, default=None,
        help="a checkout of the reference repository to run instead of its npm package",
    )
    arguments.add_argument("--no-reference", action="store_true", help="time only ours")
    arguments.add_argument("--profile", action="store_true", help="also cProfile our parser")
    options = arguments.parse_args()
    seconds = options.seconds
    assert parse(TYPICAL_REQUEST) is not None and parse(CHAT_WITH_BLOCK) is not None

    cases: list[tuple[str, Callable[[], object]]] = [
        (name, lambda text=text: parse(text)) for name, text in PARSE_CASES.items()
    ]
    cases += [
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
    ours = {name: rate(operation, seconds) for name, operation in cases}
    reference: dict[str, float] = {}
    if options.no_reference:
        note = "reference parser not run (--no-reference)"
    else:
        try:
            found = reference_rates(
                PARSE_CASES,
                {name: reference_view(text) for name, text in PARSE_CASES.items()},
                seconds,
                options.reference_checkout,
            )
            reference, note = found.rates, f"reference parser: {found.source}, under node"
        except ReferenceUnavailable as exc:
            note = f"REFERENCE PARSER NOT MEASURED: {exc}; only our figures are printed"

    print(f"bcn-bridge protocol benchmark, Python {sys.version.split()[0]}, one core,"
          " calls per CPU second of each process (best of three batches)")
    print(f"  {note}")
    print(f"  {'case':<46} {'ours /s':>12} {'reference /s':>13} {'ours/ref':>9}")
    for name, ours_rate in ours.items():
        if name in reference:
            ratio = ours_rate / reference[name]
            print(f"  {name:<46} {ours_rate:>12,.0f} {reference[name]:>13,.0f} {ratio:>8.2f}x")
        else:
            print(f"  {name:<46} {ours_rate:>12,.0f}")
    if TARGET_CASE in reference:
        ratio = ours[TARGET_CASE] / reference[TARGET_CASE]
        verdict = "met" if ratio >= TARGET_RATIO else "NOT met"
        print(f"  {TARGET_CASE}: ours/reference {ratio:.2f}x"
              f" (target >= {TARGET_RATIO}x: {verdict})")
    if options.profile:
        profile_parse()
    return 0


if __name__ == "__main__":
    sys.exit(main())
