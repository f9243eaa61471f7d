"""`bcn-bridge run` and `bcn-bridge hub` as real processes, for tests that kill them
(SIGKILL) and restart them.

A process is started as `python -m bridge.cli` from the repository root, so it runs this
checkout's code whatever the installed console script points at. Its output (stdout and
stderr, merged) is read all the time — a full pipe would stall it — and kept for assertions.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
READY_LINE = "bcn-bridge up"
"""What `bcn-bridge run` logs once every part is started."""
START_TIMEOUT = 30.0


def free_port() -> int:
    """A TCP port nobody listens on right now (for a hub that must keep its port)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_config(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


class ServiceProcess:
    """One `python -m bridge.cli …` process; `start()` returns once it printed `ready`."""

    def __init__(
        self, args: list[str], ready: str, *, env: dict[str, str] | None = None
    ) -> None:
        self.args = args
        self.ready = ready
        self.env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost",
                    "no_proxy": "127.0.0.1,localhost", **(env or {})}
        self.lines: list[str] = []
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._line_added = asyncio.Event()

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self, *, timeout: float = START_TIMEOUT) -> None:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bridge.cli", *self.args,
            cwd=REPO, env=self.env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )
        self._reader = asyncio.create_task(self._read(self._process))
        try:
            await self.wait_for_line(self.ready, timeout=timeout)
        except TimeoutError:
            await self.kill()
            raise AssertionError(
                f"{' '.join(self.args)} did not start within {timeout}s; its log:\n" + self.log()
            ) from None

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None  # stderr is merged into it
        while line := await process.stdout.readline():
            self.lines.append(line.decode("utf-8", "replace").rstrip("\n"))
            self._line_added.set()
        self._line_added.set()

    async def wait_for_line(self, fragment: str, *, timeout: float = START_TIMEOUT,
                            after: int = 0) -> str:
        """The first log line (from index `after`) containing `fragment`."""
        async with asyncio.timeout(timeout):
            while True:
                for line in self.lines[after:]:
                    if fragment in line:
                        return line
                if not self.running and (self._reader is None or self._reader.done()):
                    raise AssertionError(f"{self.args[0]} exited; its log:\n{self.log()}")
                self._line_added.clear()
                await self._line_added.wait()

    def log(self) -> str:
        return "\n".join(self.lines)

    async def kill(self) -> None:
        """SIGKILL: no cleanup, no goodbye — what a crash or an OOM kill does."""
        await self._end(signal.SIGKILL)

    async def stop(self) -> int | None:
        """SIGTERM: the orderly stop; returns the exit code."""
        return await self._end(signal.SIGTERM)

    async def _end(self, sig: signal.Signals) -> int | None:
        process = self._process
        if process is None:
            return None
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(sig)
            try:
                async with asyncio.timeout(20):
                    await process.wait()
            except TimeoutError:
                process.kill()
                await process.wait()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        return process.returncode


class BridgeProcess(ServiceProcess):
    """`bcn-bridge run -c FILE`."""

    def __init__(self, config: Path, *, env: dict[str, str] | None = None) -> None:
        super().__init__(["run", "-c", str(config)], READY_LINE, env=env)
        self.config = config


class HubProcess(ServiceProcess):
    """`bcn-bridge hub --config FILE` (its config must give a fixed `listen` port)."""

    def __init__(self, config: Path, *, env: dict[str, str] | None = None) -> None:
        super().__init__(["hub", "--config", str(config)], "hub listening on", env=env)
        self.config = config
