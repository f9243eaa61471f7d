"""Unguessable ids for every message, without a system call for each.

`secrets.token_hex` reads the kernel's random source once per call: on the relay path that
was two `getrandom` calls per message (a webchat message's id, its reply's), 2% of the
relay's CPU (bench/relay.py, a py-spy profile). Here the same source (`os.urandom`) is read
4 KiB at a time and handed out in slices: the ids are as unguessable as before. A forked
child starts with a fresh buffer, so parent and child never hand out the same bytes.
"""

from __future__ import annotations

import os

_REFILL = 4096
_pool = b""


def token_hex(nbytes: int = 16) -> str:
    """`nbytes` random bytes as hex, like `secrets.token_hex`."""
    global _pool
    if len(_pool) < nbytes:
        _pool = os.urandom(max(_REFILL, nbytes))
    taken, _pool = _pool[:nbytes], _pool[nbytes:]
    return taken.hex()


def _forget() -> None:
    global _pool
    _pool = b""


os.register_at_fork(after_in_child=_forget)
