"""A private `redis-server` a test may kill (SIGKILL) and start again on the same port.

Unlike the shared server of the store tests (tests/support/redis_server.py), this one belongs
to one test: killing it disturbs nobody else. It keeps its data the way a production Redis
would through a restart — an append-only file fsynced on every write — so what a restart
tests is the bridge riding out the outage, not Redis forgetting acknowledged writes.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
from pathlib import Path
from types import TracebackType

import pytest

from tests.support.bridge_process import free_port
from tests.support.redis_server import answers

START_TIMEOUT = 10.0


class RedisProcess:
    """`async with RedisProcess(folder) as redis`: `redis.url`; `kill()` and `start()` again."""

    def __init__(self, folder: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("needs redis-server on PATH (e.g. `apt-get install redis-server`)",
                        pytrace=False)
        self.binary = binary
        self.folder = folder
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._process = await asyncio.create_subprocess_exec(
            self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
            "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.folder),
            "--daemonize", "no",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        async with asyncio.timeout(START_TIMEOUT):
            while not await asyncio.to_thread(answers, self.url):
                if self._process.returncode is not None:
                    raise AssertionError(f"redis-server on port {self.port} exited")
                await asyncio.sleep(0.05)

    async def kill(self) -> None:
        """SIGKILL: the server is gone at once; the port is free for `start()`."""
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.send_signal(signal.SIGKILL)
            await process.wait()

    async def __aenter__(self) -> RedisProcess:
        await self.start()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        await self.kill()
