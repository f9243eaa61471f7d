"""Who this bridge process is, as lease holders are named in the store.

`name@host:pid:token` — readable in logs and in Redis, unique per process (the random
token tells a restarted process from its dead predecessor even when, as in a container,
both got the same pid). A lease held by a process of this host that no longer runs can be
taken over at once instead of after its TTL: a single bridge restarted after a kill -9
carries on within a second, not fifteen.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket

from bridge.store.leases import Lease, LeaseStore

log = logging.getLogger(__name__)


HOST_VARIABLE = "BCN_BRIDGE_HOST"
"""Overrides the host part of instance names, where several hosts share one hostname."""


def this_host() -> str:
    return os.environ.get(HOST_VARIABLE) or socket.gethostname()


def instance_name(link_name: str) -> str:
    return f"{link_name}@{this_host()}:{os.getpid()}:{secrets.token_hex(3)}"


def is_dead_here(holder: str, me: str) -> bool:
    """Is `holder` a process of this host that has ended? (False when unsure.)"""
    _, at, where = holder.rpartition("@")
    host, _, rest = where.partition(":")
    pid_text, _, _token = rest.partition(":")
    if not at or host != this_host() or not pid_text.isdigit() or holder == me:
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return True  # our own pid, another token: a predecessor that had this pid
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, and someone else's
    return False


async def acquire_lease(leases: LeaseStore, name: str, me: str, ttl: float) -> Lease | None:
    """The lease, if free, ours, or held by a process of this host that has died."""
    lease = await leases.acquire(name, me, ttl)
    if lease is not None:
        return lease
    holder = await leases.holder(name)
    if holder is not None and is_dead_here(holder, me):
        log.info("taking over %s from %s, which is no longer running", name, holder)
        return await leases.take_over(name, holder, me, ttl)
    return None
