"""The event loop the long-running commands run on: uvloop where it is installed.

uvloop's loop and socket transports are written in C: the same bridge spends about a third
less CPU per relayed message on it (bench/relay.py, same-run ratios), which is headroom for
every chat at once. The standard loop stays available (BCN_BRIDGE_LOOP=asyncio) and is what
runs where uvloop cannot be installed (Windows).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

LOOP_VARIABLE = "BCN_BRIDGE_LOOP"


def loop_name() -> str:
    """"uvloop" or "asyncio": what `run` will use."""
    if os.environ.get(LOOP_VARIABLE, "").strip().lower() == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on the best loop available."""
    if loop_name() == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)
