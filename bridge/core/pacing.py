"""Waiting one's turn under a platform's send limits, before the call rather than after a 429.

The adapter says which budgets a post into a chat spends from (`Adapter.pacing`); the store
keeps them, shared by every instance (`bridge.store.pacing`). A call waits until all of them
have room and spends from each in the same step. A store that cannot answer (Redis down)
does not hold delivery up: the call goes unpaced, and the platform's own 429, which the
outbox honours, still keeps it within the limit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from bridge.metrics import BridgeMetrics
from bridge.store.errors import TRANSIENT_ERRORS
from bridge.store.pacing import Budget, PacingStore

log = logging.getLogger(__name__)


class Pacer:
    """Spends from send budgets, waiting for room first (see the module doc)."""

    def __init__(self, store: PacingStore, metrics: BridgeMetrics) -> None:
        self.store = store
        self.metrics = metrics
        self._store_down = False

    async def turn(self, channel: str, budgets: Sequence[Budget]) -> float:
        """Wait until one send fits `budgets`, spend it, and return the seconds waited."""
        waited = 0.0
        while budgets:
            try:
                wait = await self.store.take(budgets)
            except TRANSIENT_ERRORS as exc:
                self._unpaced(exc)
                break
            self._store_down = False
            if wait <= 0:
                break
            await asyncio.sleep(wait)
            waited += wait
        if waited:
            self.metrics.waited_for_budget(channel, waited)
        return waited

    async def room(self, budgets: Sequence[Budget]) -> float:
        """The seconds until one send would fit `budgets` (0: now); nothing is spent."""
        if not budgets:
            return 0.0
        try:
            return await self.store.room(budgets)
        except TRANSIENT_ERRORS as exc:
            self._unpaced(exc)
            return 0.0

    def _unpaced(self, exc: BaseException) -> None:
        if not self._store_down:
            log.warning("pacing: the store cannot count sends (%s: %s); posting unpaced, "
                        "the platform's 429s still honoured", type(exc).__name__, exc)
        self._store_down = True
