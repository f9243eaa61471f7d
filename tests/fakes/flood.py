"""A platform's flood control as its server applies it, for the fakes that play one."""

from __future__ import annotations

import math
import time
from collections import deque


def flood_wait(sent: deque[float], count: int, seconds: float) -> int | None:
    """Past `count` sends in any `seconds` (`sent`: this key's send times), the whole
    seconds until a place frees, as a 429's retry-after says; else None, and the send is
    counted."""
    now = time.monotonic()
    while sent and sent[0] <= now - seconds:
        sent.popleft()
    if len(sent) >= count:
        return max(1, math.ceil(sent[len(sent) - count] + seconds - now))
    sent.append(now)
    return None
