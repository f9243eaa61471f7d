"""Paused bindings in process memory (tests and `memory://`)."""

from __future__ import annotations

from datetime import datetime

from bridge.store.pauses import Paused, PauseStore, checked_at


class MemoryPauseStore(PauseStore):
    __slots__ = ("_paused",)

    def __init__(self) -> None:
        self._paused: dict[str, Paused] = {}

    async def pause(self, key: str, by: str, at: datetime) -> bool:
        when = checked_at(at)
        if key in self._paused:
            return False
        self._paused[key] = Paused(by, when)
        return True

    async def resume(self, key: str) -> bool:
        return self._paused.pop(key, None) is not None

    async def all(self) -> dict[str, Paused]:
        return dict(self._paused)
