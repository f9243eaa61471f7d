"""Send budgets in Redis: one sorted set per budget key, send times (ms) as scores.

One script checks every budget of a send and spends from all of them, or from none, with
nothing in between; its clock is the Redis server's (`TIME`), so instances on hosts whose
clocks differ still share one window. Each set expires a window after its last send, so an
idle chat leaves nothing behind.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from bridge.store.pacing import Budget, PacingStore
from bridge.store.redis.concern import RedisConcern


class RedisPacingStore(RedisConcern, PacingStore):
    __slots__ = ()

    async def take(self, budgets: Sequence[Budget]) -> float:
        return await self._run(budgets, spend=True)

    async def room(self, budgets: Sequence[Budget]) -> float:
        return await self._run(budgets, spend=False)

    async def _run(self, budgets: Sequence[Budget], *, spend: bool) -> float:
        if not budgets:
            return 0.0
        keys = [self._keys.pace(budget.key) for budget in budgets]
        args: list[str | int] = [uuid.uuid4().hex if spend else ""]
        for budget in budgets:
            args += [budget.limit, max(1, round(budget.window * 1000))]
        wait_ms = await self._scripts.pace(keys=keys, args=args)
        return int(wait_ms) / 1000
