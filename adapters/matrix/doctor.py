"""`bcn-bridge doctor` for a Matrix account: the homeserver, the tokens, the push listener.

Asks what `start()` relies on without starting anything, so it is safe beside a running
bridge: the homeserver answers `/_matrix/client/versions`; `/whoami` with the as_token is
the bridge user; the `listen` address is either free for the bridge or answered by a
running one (then the homeserver is asked to ping it, as the bridge does at start).
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import aiohttp

from adapters.matrix.config import MatrixAccountConfig
from bridge.core.adapter import Diagnosis
from bridge.listen import parse_listen
from bridge.logs import REDACTOR, redact

TIMEOUT = aiohttp.ClientTimeout(total=10)
PING_ATTEMPTS = 3
PING_PAUSE = 0.5


async def diagnose(account: str, config: MatrixAccountConfig) -> list[Diagnosis]:
    REDACTOR.add([config.as_token.get_secret_value(), config.hs_token.get_secret_value()])
    channel, where = f"matrix:{account}", f"accounts.matrix.{account}"
    found: list[Diagnosis] = []
    async with aiohttp.ClientSession(timeout=TIMEOUT) as session:
        status, body = await _call(session, "GET", f"{config.homeserver}/_matrix/client/versions")
        if status != 200 or not isinstance(body, dict):
            return [Diagnosis.fail(
                f"{channel}: the homeserver at {config.homeserver} does not answer "
                f"/_matrix/client/versions ({_said(status, body)})",
                f"check {where}.homeserver (the client-server API base URL) and the network")]
        versions = body.get("versions") or []
        found.append(Diagnosis.ok(f"{channel}: the homeserver answers (newest spec version "
                                  f"{versions[-1] if versions else 'unknown'})"))
        auth = {"Authorization": f"Bearer {config.as_token.get_secret_value()}"}
        status, body = await _call(session, "GET",
                                   f"{config.homeserver}/_matrix/client/v3/account/whoami",
                                   headers=auth, params={"user_id": config.bot_user_id})
        if status == 200 and isinstance(body, dict) and body.get("user_id") == config.bot_user_id:
            found.append(Diagnosis.ok(f"{channel}: the as_token is accepted; the bridge user "
                                      f"is {config.bot_user_id}"))
        else:
            found.append(Diagnosis.fail(
                f"{channel}: the homeserver does not accept the as_token for "
                f"{config.bot_user_id} ({_said(status, body)})",
                f"add the output of `bcn-bridge matrix registration -c <config>` to the "
                f"homeserver's app_service_config_files and restart it; check {where}.as_token "
                "and bot_localpart"))
            return found
        found.append(await _listener(session, channel, where, config, auth))
    return found


async def _listener(session: aiohttp.ClientSession, channel: str, where: str,
                    config: MatrixAccountConfig, auth: dict[str, str]) -> Diagnosis:
    host, port = parse_listen(config.listen)
    local = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
    hs_auth = {"Authorization": f"Bearer {config.hs_token.get_secret_value()}"}
    status, _ = await _call(session, "POST", f"http://{_host(local)}:{port}/_matrix/app/v1/ping",
                            headers=hs_auth, json={})
    if status is None:
        if _can_bind(host, port):
            return Diagnosis.ok(f"{channel}: {config.listen} is free for the push listener")
        return Diagnosis.fail(f"{channel}: something other than the bridge holds "
                              f"{config.listen}", f"free the port or change {where}.listen")
    if status != 200:
        return Diagnosis.fail(
            f"{channel}: what answers at {config.listen} refuses the hs_token ({status})",
            f"check {where}.hs_token against the registration file")
    for attempt in range(PING_ATTEMPTS):  # a homeserver's kept connection may be stale
        status, body = await _call(
            session, "POST",
            f"{config.homeserver}/_matrix/client/v1/appservice/{config.appservice_id}/ping",
            headers=auth, params={"user_id": config.bot_user_id}, json={})
        if status == 200:
            break
        await asyncio.sleep(PING_PAUSE * (attempt + 1))
    if status == 200:
        return Diagnosis.ok(f"{channel}: a bridge listens at {config.listen} and the "
                            f"homeserver reaches it at {config.push_url}")
    return Diagnosis.warn(
        f"{channel}: a bridge listens at {config.listen} but the homeserver cannot reach it "
        f"at {config.push_url} ({_said(status, body)})",
        f"set {where}.url to an address the homeserver can reach, and the registration's "
        "url with it")


async def _call(session: aiohttp.ClientSession, method: str, url: str,
                **options: Any) -> tuple[int | None, Any]:
    try:
        async with session.request(method, url, **options) as answer:
            try:
                return answer.status, await answer.json(content_type=None)
            except ValueError:
                return answer.status, None
    except (aiohttp.ClientError, TimeoutError) as exc:
        return None, redact(f"{type(exc).__name__}: {exc}")


def _said(status: int | None, body: Any) -> str:
    if status is None:
        return str(body)
    if isinstance(body, dict) and body.get("errcode"):
        return f"HTTP {status} {body['errcode']}"
    return f"HTTP {status}"


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _can_bind(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the listener binds
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True
