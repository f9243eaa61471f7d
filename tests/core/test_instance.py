"""Lease holder names, and telling a dead predecessor on this host from a live instance."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys

from bridge.core.instance import acquire_lease, instance_name, is_dead_here
from bridge.store.memory import MemoryStore


def test_names_are_unique_per_process_and_readable() -> None:
    first, second = instance_name("bridge-a"), instance_name("bridge-a")
    assert first != second
    assert first.startswith(f"bridge-a@{socket.gethostname()}:{os.getpid()}:")


def test_only_processes_of_this_host_that_ended_are_dead() -> None:
    me = instance_name("b")
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    gone = f"b@{socket.gethostname()}:{ended.stdout.strip()}:abcdef"
    assert is_dead_here(gone, me)
    assert is_dead_here(f"b@{socket.gethostname()}:{os.getpid()}:000000", me)  # pid reused
    assert not is_dead_here(me, me)
    assert not is_dead_here(f"b@{socket.gethostname()}:{os.getppid()}:abcdef", me)  # alive
    assert not is_dead_here(f"b@elsewhere.example:{ended.stdout.strip()}:abcdef", me)
    assert not is_dead_here("not a holder name", me)


async def test_acquire_takes_over_from_a_dead_holder_only() -> None:
    store = MemoryStore()
    me = instance_name("b")
    dead = f"b@{socket.gethostname()}:{os.getpid()}:000000"
    alive = f"b@{socket.gethostname()}:{os.getppid()}:abcdef"
    assert await store.leases.acquire("lane:a", dead, ttl=60) is not None
    assert await store.leases.acquire("lane:b", alive, ttl=60) is not None
    taken = await acquire_lease(store.leases, "lane:a", me, ttl=5)
    assert taken is not None and taken.holder == me
    assert await acquire_lease(store.leases, "lane:b", me, ttl=5) is None
    await asyncio.sleep(0)
