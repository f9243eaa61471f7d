"""An adapter's sink for tests that drive an adapter without the relay: every Inbound, in order."""

from __future__ import annotations

import asyncio

from bridge.core.model import Inbound


class Received:
    """Collects what an adapter hands the core; `next()` waits for the next one."""

    def __init__(self) -> None:
        self.items: list[Inbound] = []
        self._queue: asyncio.Queue[Inbound] = asyncio.Queue()

    async def __call__(self, inbound: Inbound) -> None:
        self.items.append(inbound)
        self._queue.put_nowait(inbound)

    async def next(self, timeout: float = 5.0) -> Inbound:
        return await asyncio.wait_for(self._queue.get(), timeout)

    def empty(self) -> bool:
        return self._queue.empty()
