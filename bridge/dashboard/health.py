"""Health as the dashboard shows it: `/readyz`'s truth, plus since when and the last error.

`BridgeStatus.down()` says what is down right now (the same call `/readyz` answers from);
this remembers, per part (the BCN link, each platform account), when it last changed and
the last reason it gave for being down, so an operator sees "down for 3 min: 401 from
Telegram" and, after it recovered, what the trouble was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bridge.web.status import BridgeStatus

BCN = "bcn"


@dataclass(slots=True)
class PartHealth:
    name: str
    up: bool
    since: datetime
    last_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "up": self.up, "since": self.since.isoformat(),
                "last_error": self.last_error}


class HealthWatch:
    def __init__(self, status: BridgeStatus, clock: Callable[[], datetime]) -> None:
        self.status = status
        self.clock = clock
        self._parts: dict[str, PartHealth] = {}

    def parts(self) -> list[str]:
        relay = self.status.relay
        return [BCN, *(sorted(relay.ctx.adapters) if relay is not None else [])]

    def read(self) -> dict[str, Any]:
        """Read the status now; a part whose state changed gets a new `since`."""
        down = self.status.down()
        now = self.clock()
        names = self.parts()
        for name in names:
            why = down.get(name) or (down.get("bridge") if name == BCN else None)
            part = self._parts.get(name)
            if part is None:
                part = self._parts[name] = PartHealth(name, why is None, now)
            if (why is None) != part.up:
                part.up, part.since = why is None, now
            if why is not None:
                part.last_error = why
        return {
            "ready": not down,
            "parts": [self._parts[name].to_dict() for name in names],
        }
