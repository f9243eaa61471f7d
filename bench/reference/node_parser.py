"""Run the reference JavaScript parser (L0T-B0T/bot-protocol) under Node, timed like ours.

The package is installed from the npm registry at bench time into a cache under the system
temp directory (its code never enters this repository); `parse_rate.js` beside this file is
our own driver, which times the reference's `parse` with the same method as
`bench/protocol.py`. A checkout of the reference repository can be named instead of the npm
package. Whatever cannot be done (no node, the package not installable, a package that is
not the reference parser) comes back as a sentence saying so, never as a made-up figure.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "bot-protocol"
VERSION = "0.1.0"
"""The reference's own package.json name and version (v0.1, the one docs/protocol.md cites)."""

DRIVER = Path(__file__).resolve().parent / "parse_rate.js"
INSTALL_TIMEOUT = 300.0


@dataclass(frozen=True)
class ReferenceRates:
    """Parses per CPU second of the node process, per case, and where the parser came from."""

    rates: dict[str, float]
    source: str


class ReferenceUnavailable(Exception):
    """The reference parser could not be run; the message says why, in one sentence."""


def reference_rates(
    cases: dict[str, str],
    expected: dict[str, dict[str, object]],
    seconds: float,
    checkout: Path | None = None,
) -> ReferenceRates:
    """Time the reference parser on `cases`, after checking it reads them as `expected`.

    `expected` holds, per case, the fields (`type`, `to`, `from`, `requestId`, `task`) the
    reference must return: a package that answers otherwise is not the reference parser
    and is not timed.
    """
    node = shutil.which("node")
    if node is None:
        raise ReferenceUnavailable("node is not installed")
    if checkout is not None:
        parser = checkout / "lib" / "parser.js"
        if not parser.is_file():
            raise ReferenceUnavailable(f"{parser} does not exist")
        source = f"checkout {checkout}"
    else:
        parser = _installed_parser()
        source = f"npm {PACKAGE}@{VERSION}"
    job = {"parser": str(parser), "seconds": seconds, "cases": cases}
    done = subprocess.run(
        [node, str(DRIVER)], input=json.dumps(job), capture_output=True, text=True,
        timeout=60 + 10 * seconds * len(cases), check=False,
    )
    if done.returncode != 0:
        raise ReferenceUnavailable(f"the node driver failed: {_last_line(done.stderr)}")
    answer = json.loads(done.stdout)
    for name, fields in expected.items():
        if answer["parsed"].get(name) != fields:
            raise ReferenceUnavailable(
                f"{source} is not the reference parser: it reads case {name!r} as"
                f" {answer['parsed'].get(name)!r}, the reference as {fields!r}"
            )
    return ReferenceRates({name: float(rate) for name, rate in answer["rates"].items()}, source)


def _installed_parser() -> Path:
    """`lib/parser.js` of the pinned package, installed once into a temp-directory cache."""
    npm = shutil.which("npm")
    if npm is None:
        raise ReferenceUnavailable("npm is not installed")
    spec = f"{PACKAGE}@{VERSION}"
    digest = hashlib.sha256(spec.encode()).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / f"bcn-bridge-bench-reference-{digest}"
    parser = cache / "node_modules" / PACKAGE / "lib" / "parser.js"
    if parser.is_file():
        return parser
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "package.json").write_text('{"private": true}\n')
    try:
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts",
             "--no-package-lock", "--loglevel=error", spec],
            cwd=cache, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise ReferenceUnavailable(f"npm install {spec} timed out") from exc
    if done.returncode != 0 or not parser.is_file():
        if "E404" in done.stderr:
            reason = "the registry has no such package: 404"
        else:
            reason = _last_line(done.stderr or done.stdout) or f"no {parser.name} in the package"
        raise ReferenceUnavailable(f"npm could not install {spec} ({reason})")
    return parser


def _last_line(output: str) -> str:
    """The last line of npm's or node's error output that says something."""
    lines = [line.removeprefix("npm error ").strip() for line in output.splitlines()]
    lines = [line for line in lines if line and not line.startswith("A complete log")]
    return lines[-1] if lines else ""
