"""What the hardening benches share: a server in its own process, its memory from /proc.

`--code DIR` runs that server from another checkout (e.g. `git archive <commit> | tar -x -C
DIR`), so the same bench measures the code before a change beside the code after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
from collections.abc import AsyncIterator
from pathlib import Path

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
async def server(script: str, *args: str, code: str | None = None
                 ) -> AsyncIterator[tuple[list[str], int]]:
    """Run `script args…` until it prints `READY …`; yields those words and its pid."""
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost"}
    if code:
        env["BENCH_CODE"] = code
    process = await asyncio.create_subprocess_exec(
        sys.executable, script, *args, cwd=code or ROOT, env=env,
        stdout=asyncio.subprocess.PIPE)
    try:
        assert process.stdout is not None
        while True:
            line = (await asyncio.wait_for(process.stdout.readline(), 120)).decode()
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
