"""What the benches that run a server share: a server in its own process, its memory from /proc.

`--code DIR` runs that server from another checkout (e.g. `git archive <commit> | tar -x -C
DIR`), so the same bench measures the code before a change beside the code after it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import statistics
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def use_code() -> None:
    """In a server process: import `bridge` and `adapters` from BENCH_CODE (default: here)."""
    sys.path.insert(0, os.environ.get("BENCH_CODE") or str(ROOT))


def memory_mb(pid: int, field: str = "VmRSS") -> float:
    """A process's resident memory now (`VmRSS`) or at its peak (`VmHWM`), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/{pid}/status has no {field}")


@contextlib.asynccontextmanager
async def server(script: str, *args: str, code: str | None = None,
                 under: Sequence[str] = ()) -> AsyncIterator[tuple[list[str], int]]:
    """Run `script args…` until it prints `READY …`; yields those words and its pid.
    `under`: a command the interpreter runs inside (e.g. valgrind and its options)."""
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost"}
    if code:
        env["BENCH_CODE"] = code
    process = await asyncio.create_subprocess_exec(
        *under, sys.executable, script, *args, cwd=code or ROOT, env=env,
        stdout=asyncio.subprocess.PIPE)
    try:
        assert process.stdout is not None
        while True:
            waited = process.stdout.readline()
            line = (await asyncio.wait_for(waited, 600 if under else 120)).decode()
            if not line:
                raise RuntimeError(f"{script} {' '.join(args)} exited before it was ready")
            if line.startswith("READY "):
                break
        yield line.split()[1:], process.pid
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the runs."""
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


Figures = dict[str, float]


def serve_if_asked(serve: Callable[[dict[str, Any]], Awaitable[None]]) -> bool:
    """`script serve '<json>'`: run the server side with those options; False otherwise."""
    if len(sys.argv) != 3 or sys.argv[1] != "serve":
        return False
    logging.basicConfig(level=logging.ERROR)  # a flood's warnings are the point, not news
    asyncio.run(serve(json.loads(sys.argv[2])))
    return True


def common_arguments(parser: argparse.ArgumentParser, scenarios: list[str]) -> None:
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scenario", choices=sorted(scenarios), default="defaults")
    parser.add_argument("--code", help="run the server from this checkout instead")


async def repeat(runs: int, one_run: Callable[[], Awaitable[Figures]],
                 show: Callable[[str, Figures], None]) -> None:
    """`runs` runs, each shown as it ends, then the median of each figure."""
    results = []
    for n in range(runs):
        results.append(await one_run())
        show(f"run {n + 1}", results[-1])
    show("median", medians(results))
