"""Which bindings an operator paused, as the relay reads it on every human message.

The truth is the store's `pauses` concern (every instance sees one pause, a restart keeps
it); this is a short-lived copy so that a busy chat costs one store read a second, not one
per message.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bridge.core.binding import Binding
from bridge.core.spool import binding_key
from bridge.store.pauses import Paused, PauseStore

PAUSES_FRESH_FOR = 1.0
"""Seconds a read of the paused bindings is reused: a pause made on another instance takes
effect here within this time (on the instance that made it, at once)."""


class BindingPauses:
    """The paused bindings, read from the store at most once per `fresh_for` seconds."""

    def __init__(
        self,
        store: PauseStore,
        *,
        fresh_for: float = PAUSES_FRESH_FOR,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.fresh_for = fresh_for
        self._monotonic = monotonic
        self._read_at: float | None = None
        self._paused: dict[str, Paused] = {}

    async def all(self) -> dict[str, Paused]:
        now = self._monotonic()
        if self._read_at is None or now - self._read_at >= self.fresh_for:
            self._paused = await self.store.all()
            self._read_at = now
        return self._paused

    async def of(self, binding: Binding) -> Paused | None:
        return (await self.all()).get(binding_key(binding))

    def forget(self) -> None:
        """Read again next time (after this instance changed a pause)."""
        self._read_at = None
