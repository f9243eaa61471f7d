"""Bindings an operator paused: their people's messages are not relayed to bots meanwhile.

The pause is state, not configuration: set from the dashboard while the bridge runs, seen by
every bridge instance sharing the store (whichever one receives the next message must hold
it back), and kept across a restart, so it sits behind the store like every other piece of
state. A pause records who set it and when, for the dashboard to show; pausing a binding
that is paused already keeps the first record, so a second operator's click changes nothing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import UTC, datetime


@dataclass(frozen=True, slots=True)
class Paused:
    by: str
    """Who paused it (the operator's name)."""
    at: datetime
    """When (timezone-aware; stores give it back in UTC)."""


def checked_at(at: datetime) -> datetime:
    """`at` in UTC; a naive datetime is a ValueError (its moment would be a guess)."""
    if not isinstance(at, datetime) or at.tzinfo is None or at.utcoffset() is None:
        raise ValueError(f"a pause needs a timezone-aware time, got {at!r}")
    return at.astimezone(UTC)


class PauseStore(ABC):
    """Paused binding keys (e.g. `webchat:main|room-1|`: any string)."""

    @abstractmethod
    async def pause(self, key: str, by: str, at: datetime) -> bool:
        """Pause the binding; False when it was paused already (the first by/at stay)."""

    @abstractmethod
    async def resume(self, key: str) -> bool:
        """Resume the binding; False when it was not paused."""

    @abstractmethod
    async def all(self) -> dict[str, Paused]:
        """Every paused binding key, with who paused it and when."""
