"""Processes for the interop test: a real `bcn-bridge hub`, and the Node host of the
BCN server's published client. Both are driven over pipes; nothing here sleeps for a
fixed time — every wait is for something to show up, bounded by `WAIT`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

WAIT = 20.0
"""Upper bound for anything to show up; a passing run never waits this long."""

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PACKAGE_JSON = HERE / "package.json"


def node_tools() -> tuple[str, str] | None:
    node, npm = shutil.which("node"), shutil.which("npm")
    return (node, npm) if node and npm else None


async def installed_client(npm: str) -> Path:
    """`node_modules` with the pinned client, installed once per package.json into tmp."""
    digest = hashlib.sha256(PACKAGE_JSON.read_bytes()).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / f"bcn-bridge-interop-{digest}"
    modules = cache / "node_modules"
    marker = modules / "@avernet-plugin" / "deepseek-harness-channel-bcn" / "package.json"
    if marker.exists():
        return modules
    cache.mkdir(parents=True, exist_ok=True)
    shutil.copy(PACKAGE_JSON, cache / "package.json")
    child = await asyncio.create_subprocess_exec(
        npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--no-package-lock",
        "--loglevel=error", cwd=cache,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(child.communicate(), 300)
    said = out.decode("utf-8", "replace")
    if child.returncode != 0 and unreachable_registry(said):
        raise RegistryUnreachable(said.strip().splitlines()[0] if said.strip() else "npm")
    if child.returncode != 0 or not marker.exists():
        raise RuntimeError(f"npm install of the interop client failed:\n{said}")
    return modules


class RegistryUnreachable(RuntimeError):
    """npm could not reach its registry (no network here): the client cannot be had, which
    says nothing about the bridge; any other install failure is a failure."""


_NETWORK_ERRORS = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT",
                   "ENETUNREACH", "EHOSTUNREACH", "network request to", "getaddrinfo")


def unreachable_registry(npm_output: str) -> bool:
    """Does npm's output say the registry could not be reached (rather than refused us)?"""
    return any(marker in npm_output for marker in _NETWORK_ERRORS)


class HubProcess:
    """`python -m bridge.cli hub --config FILE`, run from the worktree root."""

    def __init__(self, config_path: Path) -> None:
        self.config_path = config_path
        self.port = 0
        self.lines: list[str] = []
        self._child: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()

    @staticmethod
    def write_config(path: Path, hub: dict[str, Any]) -> Path:
        path.write_text(yaml.safe_dump({"hub": hub}))
        return path

    async def start(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self._listening = asyncio.Event()
        self._child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bridge.cli", "hub", "--config", str(self.config_path),
            cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        self._reader = asyncio.create_task(self._read())
        await asyncio.wait_for(self._listening.wait(), WAIT)

    async def _read(self) -> None:
        assert self._child is not None and self._child.stdout is not None
        while line := await self._child.stdout.readline():
            text = line.decode(errors="replace").rstrip()
            self.lines.append(text)
            found = re.search(r"hub listening on ws://127\.0\.0\.1:(\d+) \(bots", text)
            if found:
                self.port = int(found.group(1))
                self._listening.set()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def log_has(self, words: str) -> bool:
        return any(words in line for line in self.lines)

    async def stop(self) -> int | None:
        child = self._child
        if child is None:
            return None
        if child.returncode is None:
            child.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(child.wait(), WAIT)
            except TimeoutError:
                child.kill()
                await child.wait()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        self._child = None
        return child.returncode


class NodeHost:
    """The Node host of the published client; JSON lines both ways (see host/host.mjs)."""

    def __init__(self, node: str, modules: Path, endpoint: str, onboarding_token: str) -> None:
        self.node = node
        self.modules = modules
        self.endpoint = endpoint
        self.onboarding_token = onboarding_token
        self.observed: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self._child: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._changed = asyncio.Event()
        self._ids = 0

    async def start(self) -> None:
        env = {**os.environ, "BCN_ONBOARDING_TOKEN": self.onboarding_token}
        self._child = await asyncio.create_subprocess_exec(
            self.node, str(HERE / "host" / "host.mjs"), "--modules", str(self.modules),
            "--endpoint", self.endpoint, "--bot-name", "Harness",
            env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        self._tasks = [asyncio.create_task(self._read_stdout()),
                       asyncio.create_task(self._read_stderr())]

    async def _read_stdout(self) -> None:
        assert self._child is not None and self._child.stdout is not None
        while line := await self._child.stdout.readline():
            try:
                self.observed.append(json.loads(line))
            except ValueError:
                self.stderr.append(line.decode(errors="replace"))
            self._changed.set()
        self._changed.set()

    async def _read_stderr(self) -> None:
        assert self._child is not None and self._child.stderr is not None
        while line := await self._child.stderr.readline():
            self.stderr.append(line.decode(errors="replace").rstrip())

    def seen(self, event: str, **fields: Any) -> list[dict[str, Any]]:
        return [o for o in self.observed if o.get("event") == event
                and all(o.get(key) == value for key, value in fields.items())]

    async def wait_for(self, event: str, after: int = 0, **fields: Any) -> dict[str, Any]:
        """The first observation of `event` (with `fields`) among those from index `after`."""
        async with asyncio.timeout(WAIT):
            while True:
                for observation in self.observed[after:]:
                    if observation.get("event") == event and all(
                        observation.get(key) == value for key, value in fields.items()
                    ):
                        return observation
                if self._child is not None and self._child.returncode is not None:
                    raise AssertionError(f"the host exited: {self.stderr[-20:]}")
                self._changed.clear()
                await self._changed.wait()

    async def command(self, cmd: str, **fields: Any) -> dict[str, Any]:
        """Send one command and wait until the host has carried it out; returns its result."""
        assert self._child is not None and self._child.stdin is not None
        self._ids += 1
        command_id = f"c{self._ids}"
        self._child.stdin.write((json.dumps({"cmd": cmd, "id": command_id, **fields})
                                 + "\n").encode())
        await self._child.stdin.drain()
        done = await self.wait_for("done", id=command_id)
        if "error" in done:
            raise AssertionError(f"host command {cmd} failed: {done['error']}")
        return done

    async def stop(self) -> int | None:
        child = self._child
        if child is None:
            return None
        if child.returncode is None and child.stdin is not None:
            with contextlib.suppress(ConnectionError):
                child.stdin.write(b'{"cmd": "stop"}\n')
                await child.stdin.drain()
            try:
                await asyncio.wait_for(child.wait(), WAIT)
            except TimeoutError:
                child.kill()
                await child.wait()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._child = None
        return child.returncode
