"""`bcn-bridge doctor`: everything a deployment needs, checked live, one verdict per line.

The config is loaded as `run` would; then the store is opened and a record written and read
back (a SQLite file or a hub data directory not created yet is only checked to be
creatable: doctor leaves nothing behind where it runs); the BCN is reached (a remote one
with `bcn.token`, asking it for each bound group; the embedded hub's listen address and
data directory are tried); and every platform account checks itself through its adapter's
`diagnose()` (found through the adapter registry, so a new platform brings its own check).
Nothing is relayed, polled or registered: doctor can run beside a bridge that is up.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import tempfile
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

from bridge.bcn import BcnError, Connection, ConnectionClosed, ErrorCode
from bridge.config import ConfigError, load_config
from bridge.config.schema import BridgeConfig
from bridge.core import registry
from bridge.core.adapter import Diagnosis
from bridge.core.link import PROTOCOL_VERSION, channel_url
from bridge.logs import redact
from bridge.store import open_store
from bridge.store.opening import parse_store_url, redacted
from bridge.store.sqlite import IN_MEMORY
from bridge.web.server import WebServer

CHECK_TIMEOUT = 15.0
"""Seconds any one check may take before it counts as failed."""

Report = Callable[[Diagnosis], None]


async def run_doctor(path: str, report: Report) -> bool:
    """Report every check on `path`'s deployment; True when nothing failed."""
    results: list[Diagnosis] = []

    def say(item: Diagnosis) -> None:
        results.append(item)
        report(item)

    config = check_config(path, say)
    if config is None:
        return False
    for check in (check_store, check_bcn, check_accounts):
        what = check.__name__.removeprefix("check_")
        for item in await probe(what, check(config), CHECK_TIMEOUT * 2,
                                "check the network path to it"):
            say(item)
    return not any(item.status == "fail" for item in results)


async def probe(
    what: str, check: Awaitable[list[Diagnosis]], timeout: float, fix: str
) -> list[Diagnosis]:
    """Run one check; whatever goes wrong in it is one ✗ line naming `what`.

    A check reads answers from things doctor does not control — a platform's API, a proxy in
    front of it, a BCN of another version. Each check handles the failures it knows; this
    is the net under all of them, so an answer nobody planned for (`true` where an object
    belongs) is a line naming the account, never a traceback that hides the other checks.
    """
    try:
        async with asyncio.timeout(timeout):
            return await check
    except TimeoutError:
        return [Diagnosis.fail(f"{what}: no answer within {timeout:g}s", fix)]
    except Exception as exc:
        return [Diagnosis.fail(
            f"{what}: the check stopped on an unexpected answer ({_reason(exc, typed=True)})",
            fix,
        )]


def check_config(path: str, say: Report) -> BridgeConfig | None:
    try:
        config = load_config(path)
    except ConfigError as exc:
        say(Diagnosis.fail(f"config {path}: {len(exc.issues)} problem(s)",
                           "fix each line below, then run doctor again"))
        for issue in exc.issues:
            say(Diagnosis.fail(f"  {issue}"))
        return None
    accounts = sum(len(named) for named in config.accounts.values())
    say(Diagnosis.ok(f"config {path}: valid ({accounts} account(s), "
                     f"{len(config.bindings)} binding(s))"))
    return config


async def check_store(config: BridgeConfig) -> list[Diagnosis]:
    where = redacted(config.store)
    missing = _sqlite_file_not_created(config.store)
    if missing is not None:
        # Opening it would create it (and its folders) wherever doctor happens to run.
        return [_creatable(f"store {where}", missing, "run creates it")]
    try:
        store = await open_store(config.store)
    except Exception as exc:  # any backend's own error: all we can do is show it
        return [Diagnosis.fail(f"store {where}: cannot open it ({_reason(exc)})",
                               "check the path is writable (SQLite) or the server is up "
                               "(Redis), and the URL in store:")]
    probe = {"checked": datetime.now(UTC).isoformat()}
    try:
        await store.message_map.put("doctor:probe", probe, datetime.now(UTC))
        back = await store.message_map.get("doctor:probe")
    except Exception as exc:
        return [Diagnosis.fail(f"store {where}: opened, but writing failed ({_reason(exc)})",
                               "check the disk is not full and the file is writable")]
    finally:
        await store.close()
    if back != probe:
        return [Diagnosis.fail(f"store {where}: a record written was not read back",
                               "check nothing else rewrites this store")]
    return [Diagnosis.ok(f"store {where}: opened, written and read back")]


async def check_bcn(config: BridgeConfig) -> list[Diagnosis]:
    if config.bcn.embedded:
        assert config.hub is not None  # the config rules require it
        return [_listen_check("hub.listen", config.hub.listen), _data_dir_check(config)]
    return await _remote_bcn(config)


def _listen_check(key: str, listen: str) -> Diagnosis:
    """Can the address be listened on? In use is fine only if this deployment runs now."""
    from bridge.listen import parse_listen

    host, port = parse_listen(listen)
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return Diagnosis.warn(f"{key} {listen} is in use",
                                      f"fine if this bridge is running now; otherwise change "
                                      f"{key}")
            return Diagnosis.fail(f"{key} {listen}: cannot listen ({_reason(exc)})",
                                  f"change {key} to an address of this machine")
    return Diagnosis.ok(f"{key} {listen} is free")


def _sqlite_file_not_created(store: str) -> Path | None:
    """The SQLite store's file, when the store is one and the file does not exist yet."""
    url = parse_store_url(store)
    if url.scheme != "sqlite" or not url.path or url.path == IN_MEMORY:
        return None
    path = Path(url.path)
    return None if path.exists() else path


def _creatable(what: str, path: Path, outcome: str) -> Diagnosis:
    """A path that does not exist yet, checked without creating it: can its nearest existing
    folder be written, so that the bridge can create it?"""
    existing = next(parent for parent in path.absolute().parents if parent.exists())
    if existing.is_dir() and os.access(existing, os.W_OK | os.X_OK):
        return Diagnosis.ok(f"{what}: not created yet; {existing} is writable, so {outcome}")
    return Diagnosis.fail(f"{what}: {path} does not exist and {existing} is not writable",
                          f"create {path.parent} for the user the bridge runs as, or change it")


def _data_dir_check(config: BridgeConfig) -> Diagnosis:
    assert config.hub is not None
    data_dir = Path(config.hub.data_dir)
    if not data_dir.exists():
        return _creatable("embedded hub: hub.data_dir", data_dir, "the hub creates it")
    try:
        with tempfile.NamedTemporaryFile(dir=data_dir, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Diagnosis.fail(f"hub.data_dir {data_dir}: not writable ({_reason(exc)})",
                              "create it for the user the bridge runs as, or change it")
    return Diagnosis.ok(f"embedded hub: hub.data_dir {data_dir} is writable")


async def _remote_bcn(config: BridgeConfig) -> list[Diagnosis]:
    """Connect a link of our own (no bindings, so nothing is delivered to it) and ask the
    BCN about every bound group."""
    bcn = config.bcn
    url = channel_url(bcn.url)
    where = redacted(url)
    async with aiohttp.ClientSession() as session:
        try:
            async with asyncio.timeout(CHECK_TIMEOUT):
                ws = await session.ws_connect(url, heartbeat=None)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            return [Diagnosis.fail(f"BCN {where}: cannot connect ({_reason(exc)})",
                                   "check bcn.url and that the BCN (hub) is running")]
        conn = Connection(ws, name="doctor", request_timeout=CHECK_TIMEOUT)
        reader = asyncio.create_task(conn.run())
        try:
            return await _ask_bcn(conn, config, where)
        finally:
            await conn.close()
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)


async def _ask_bcn(conn: Connection, config: BridgeConfig, where: str) -> list[Diagnosis]:
    params = {"token": config.bcn.token or "", "protocol_version": PROTOCOL_VERSION,
              "link_name": f"{config.bcn.link_name}-doctor", "bindings": []}
    try:
        await conn.request("channel.connect", params, timeout=CHECK_TIMEOUT)
    except BcnError as exc:
        if exc.code == ErrorCode.UNAUTHORIZED:
            return [Diagnosis.fail(f"BCN {where}: refused bcn.token ({exc.message})",
                                   "set bcn.token to one of the hub's link_tokens")]
        return [Diagnosis.fail(f"BCN {where}: refused the link ({exc})")]
    except (ConnectionClosed, TimeoutError) as exc:
        return [Diagnosis.fail(f"BCN {where}: no answer to channel.connect ({_reason(exc)})",
                               "check bcn.url points at a BCN's /ws/channel")]
    found = [Diagnosis.ok(f"BCN {where}: link accepted (bcn.token is valid)")]
    for group in sorted({binding.group for binding in config.bindings}):
        found.append(await _group_check(conn, group))
    return found


async def _group_check(conn: Connection, group: str) -> Diagnosis:
    try:
        answer = await conn.request("channel.participants", {"group_id": group})
    except BcnError as exc:
        return Diagnosis.fail(f"BCN group {group}: {exc.message}",
                              "create the group on the BCN, or fix the bindings' group:")
    except (ConnectionClosed, TimeoutError) as exc:
        return Diagnosis.fail(f"BCN group {group}: no answer ({_reason(exc)})")
    bots = [p for p in answer.get("participants") or [] if isinstance(p, dict)]
    online = [str(p.get("name")) for p in bots if p.get("online")]
    if not bots:
        return Diagnosis.warn(f"BCN group {group}: exists, but has no bots",
                              "add bots to the group, or nobody will answer")
    return Diagnosis.ok(f"BCN group {group}: {len(bots)} bot(s), online: "
                        f"{', '.join(online) or 'none yet'}")


async def check_accounts(config: BridgeConfig) -> list[Diagnosis]:
    """Each account checks itself through its adapter (`Adapter.diagnose`)."""
    found: list[Diagnosis] = []
    web = WebServer(config.web.listen) if config.web.enabled else None
    if web is not None:
        found.append(_listen_check("web.listen", config.web.listen))
    for channel_type, accounts in config.accounts.items():
        for name, account_config in accounts.items():
            found += await probe(f"{channel_type}:{name}",
                                 _diagnose(config, channel_type, name, account_config, web),
                                 CHECK_TIMEOUT,
                                 f"check the network, and that accounts.{channel_type}.{name} "
                                 f"points at {channel_type}'s API itself")
    if not config.accounts:
        found.append(Diagnosis.warn("accounts: none configured",
                                    "add one under accounts: (see docs/config.md)"))
    return found


async def _diagnose(config: BridgeConfig, channel_type: str, name: str, account_config: Any,
                    web: WebServer | None) -> list[Diagnosis]:  # fmt: skip
    """One account checks itself, knowing its bindings (Discord looks at each bound channel)."""
    adapter = registry.adapter_class(channel_type)(name, account_config, _no_sink, web=web)
    adapter.use_bindings([b for b in config.bindings if b.channel == adapter.channel])
    return await adapter.diagnose()


async def _no_sink(_inbound: Any) -> None:
    """Doctor relays nothing; adapters are built only to check their accounts."""


def _reason(exc: BaseException, *, typed: bool = False) -> str:
    """The exception in a few words, safe to print (no registered secret, nothing shaped like
    one); `typed` keeps its class name, which is all a surprise has to go on."""
    if isinstance(exc, OSError) and exc.strerror:
        return redact(exc.strerror)
    if typed:
        return redact(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    return redact(str(exc) or type(exc).__name__)
