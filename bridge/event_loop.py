"""The event loop the long-running commands run on: uvloop where it is installed.

uvloop's loop and socket transports are written in C: the same bridge spends about a third
less CPU per relayed message on it (bench/relay.py, same-run ratios), which is headroom for
every chat at once. The standard loop stays available (BCN_BRIDGE_LOOP=asyncio) and is what
runs where uvloop cannot be installed (Windows).

The garbage collector is tuned here too, for the same reason. Relaying a message allocates
a few hundred short-lived containers (frames, coroutines, futures); with Python's default
thresholds (700, 10, 10) a young collection runs every few messages and promotes whatever is
in flight at that moment, so older collections keep re-scanning it, and every full one walks
all the objects imported at startup (tens of milliseconds with the loop stopped). A larger
young threshold and freezing what startup made (`settle`) cut the collector's share of the
relay's CPU from about 5% to under 1% (bench/relay.py).
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

LOOP_VARIABLE = "BCN_BRIDGE_LOOP"

GC_THRESHOLDS = (5_000, 20, 20)
"""Young-generation allocations before a collection, and collections before an older one."""


def loop_name() -> str:
    """"uvloop" or "asyncio": what `run` will use."""
    if os.environ.get(LOOP_VARIABLE, "").strip().lower() == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def settle() -> None:
    """Call once a command is up (modules imported, config read, sockets listening): what
    exists by then lives as long as the process, so it leaves the collector's generations
    and no later collection scans it again."""
    gc.collect()
    gc.freeze()


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on the best loop available, with the collector tuned for it."""
    gc.set_threshold(*GC_THRESHOLDS)
    if loop_name() == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)
