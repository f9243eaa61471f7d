"""A real Synapse homeserver for one test session: SQLite, one client listener, no federation.

The bridge's registration (its tokens and the URL of its push listener) must be on disk
before Synapse starts, so the session picks the bridge's listen port up front and every
test's bridge listens there (tests run one after another). Synapse runs as a child process
that dies with its parent (PR_SET_PDEATHSIG), and is stopped by its pid at the end.

Every rate limit is raised out of reach unless `start_synapse(..., message_limit=...)` sets
Synapse's `rc_message` (events sent, profile changes) to a real one; `lift_message_limit`
then exempts one user (a person driving the test) from it.
"""

from __future__ import annotations

import ctypes
import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.support.bridge_process import free_port

SERVER_NAME = "localhost"
SHARED_SECRET = "test-registration-shared-secret"
START_TIMEOUT = 60.0
PR_SET_PDEATHSIG = 1

_HIGH = {"per_second": 10_000, "burst_count": 10_000}


@dataclass(frozen=True)
class MessageLimit:
    """Synapse's `rc_message`: `burst_count` events at once, then `per_second`."""

    per_second: float
    burst_count: int

    def as_config(self) -> dict[str, float]:
        return {"per_second": self.per_second, "burst_count": self.burst_count}


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGTERM when the test process goes, even by kill -9."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def homeserver_config(folder: Path, port: int, registration: Path,
                      message_limit: MessageLimit | None = None) -> dict[str, Any]:
    return {
        "server_name": SERVER_NAME,
        "pid_file": str(folder / "homeserver.pid"),
        "public_baseurl": f"http://127.0.0.1:{port}/",
        "listeners": [{
            "port": port, "bind_addresses": ["127.0.0.1"], "type": "http", "tls": False,
            "x_forwarded": False, "resources": [{"names": ["client"], "compress": False}],
        }],
        "database": {"name": "sqlite3", "args": {"database": str(folder / "homeserver.db")}},
        "log_config": str(folder / "log.yaml"),
        "media_store_path": str(folder / "media"),
        "signing_key_path": str(folder / "signing.key"),
        "registration_shared_secret": SHARED_SECRET,
        "macaroon_secret_key": "test-macaroon-secret",
        "form_secret": "test-form-secret",
        "report_stats": False,
        "enable_metrics": False,
        "trusted_key_servers": [],
        "suppress_key_server_warning": True,
        "federation_domain_whitelist": [],
        "url_preview_enabled": False,
        "presence": {"enabled": False},
        "app_service_config_files": [str(registration)],
        "rc_message": message_limit.as_config() if message_limit else _HIGH,
        "rc_registration": _HIGH,
        "rc_login": {"address": _HIGH, "account": _HIGH, "failed_attempts": _HIGH},
        "rc_joins": {"local": _HIGH, "remote": _HIGH},
        "rc_joins_per_room": _HIGH,
        "rc_invites": {"per_room": _HIGH, "per_user": _HIGH, "per_issuer": _HIGH},
        "rc_admin_redaction": _HIGH,
        "rc_3pid_validation": _HIGH,
        "rc_presence": {"per_user": _HIGH},
        "rc_delayed_event_mgmt": _HIGH,
        "rc_reports": _HIGH,
        "rc_room_creation": _HIGH,
    }


LOG_CONFIG = {
    "version": 1,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"file": {"class": "logging.FileHandler", "formatter": "plain",
                          "filename": "__LOG__"}},
    "root": {"level": "WARNING", "handlers": ["file"]},
    "disable_existing_loggers": False,
}


@dataclass
class Synapse:
    """A running homeserver; `url` is its client-server API base URL."""

    folder: Path
    port: int
    message_limit: MessageLimit | None = None
    process: subprocess.Popen[bytes] | None = None
    _admin_token: str | None = field(default=None, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, registration: Path) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        config = homeserver_config(self.folder, self.port, registration, self.message_limit)
        log_config = json.loads(json.dumps(LOG_CONFIG).replace(
            "__LOG__", str(self.folder / "homeserver.log")))
        (self.folder / "log.yaml").write_text(yaml.safe_dump(log_config), encoding="utf-8")
        path = self.folder / "homeserver.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        _write_signing_key(self.folder / "signing.key")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "synapse.app.homeserver", "-c", str(path)],
            cwd=self.folder, stdout=subprocess.DEVNULL,
            stderr=open(self.folder / "stderr.log", "wb"),
            preexec_fn=_die_with_parent,
            env={**os.environ, "SYNAPSE_CACHE_FACTOR": "0.1"},
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("synapse exited at start:\n" + self.log_tail())
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=1) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)
        raise RuntimeError("synapse did not answer /health in time:\n" + self.log_tail())

    def log_tail(self, lines: int = 40) -> str:
        found = []
        for name in ("stderr.log", "homeserver.log"):
            path = self.folder / name
            if path.exists():
                found += path.read_text(errors="replace").splitlines()[-lines:]
        return "\n".join(found)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()

    def register(self, localpart: str, password: str = "password", *,
                 admin: bool = False) -> dict[str, Any]:
        """A user made through the shared-secret admin API; its `user_id` and
        `access_token`."""
        endpoint = f"{self.url}/_synapse/admin/v1/register"
        with urllib.request.urlopen(endpoint, timeout=5) as answer:
            nonce = json.load(answer)["nonce"]
        mac = hmac.new(SHARED_SECRET.encode(), digestmod=hashlib.sha1)
        for part in (nonce, localpart, password, "admin" if admin else "notadmin"):
            mac.update(part.encode())
            if part != ("admin" if admin else "notadmin"):
                mac.update(b"\x00")
        body = json.dumps({"nonce": nonce, "username": localpart, "password": password,
                           "admin": admin, "mac": mac.hexdigest()}).encode()
        request = urllib.request.Request(endpoint, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return dict(json.load(answer))

    def lift_message_limit(self, user_id: str) -> None:
        """Exempt an existing local user from `rc_message` (Synapse's admin API
        `override_ratelimit`, as a server admin registered for it the first time)."""
        if self._admin_token is None:
            self._admin_token = str(self.register("synapse_admin", admin=True)["access_token"])
        endpoint = f"{self.url}/_synapse/admin/v1/users/{user_id}/override_ratelimit"
        body = json.dumps({"messages_per_second": 0, "burst_count": 0}).encode()
        request = urllib.request.Request(
            endpoint, data=body, method="POST",
            headers={"Content-Type": "application/json",
                     "Authorization": f"Bearer {self._admin_token}"})
        with urllib.request.urlopen(request, timeout=10):
            pass


def _write_signing_key(path: Path) -> None:
    if path.exists():
        return
    from signedjson.key import generate_signing_key, write_signing_keys

    with path.open("w") as out:
        write_signing_keys(out, [generate_signing_key("a_test")])


def start_synapse(folder: Path, registration: Path, attempts: int = 2, *,
                  message_limit: MessageLimit | None = None) -> Synapse:
    """Synapse on a free port; tried again on another port if the first is taken between
    choosing it and Synapse binding it (another test run on the machine).

    `message_limit` sets `rc_message` (otherwise raised out of reach like every other limit);
    it limits an application service's users only when its registration says
    `rate_limited: true`."""
    for attempt in range(1, attempts + 1):
        synapse = Synapse(folder / f"run{attempt}", free_port(), message_limit)
        try:
            synapse.start(registration)
        except RuntimeError:
            synapse.stop()
            if attempt == attempts:
                raise
            continue
        return synapse
    raise AssertionError("unreachable")
