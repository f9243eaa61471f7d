"""Exponential backoff with jitter, written once.

Everything the bridge itself retries waits with this, so that reconnect storms are spread
out the same way everywhere: the BCN link client (`bridge.core.link`), the bot SDK
(`bridge.bcn.bot.client`), the outbox (`bridge.core.outbox`, honouring a platform's
`retry_after`), the hub's deliveries (`bridge.hub.deliveries`), and the adapters through
`bridge.core.reconnect` (`Retrier.until_done`, `Retrier.keep_connected`; Slack retries
relaying a payload with it). Where a platform library owns the loop (python-telegram-bot's long
polling, slack_sdk's Socket Mode, discord.py's gateway) it waits its own way; the bridge
only watches those with an `OutageTracker` (`bridge.core.outage`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

_JITTER = random.Random()
"""One generator for every Backoff: seeding one per outbox item cost more than its retries."""


@dataclass(slots=True)
class Backoff:
    """Delays of `initial * factor**n`, capped at `maximum`, with +/- `jitter` spread.

    Call `next_delay()` after each failure and `reset()` after a success. `retry_after`
    (seconds, e.g. from a platform's 429) overrides the computed delay when it is longer.
    """

    initial: float = 1.0
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 0.2
    attempts: int = 0
    _rng: random.Random = field(default=_JITTER, repr=False)

    def next_delay(self, retry_after: float | None = None) -> float:
        base = min(self.maximum, self.initial * (self.factor ** self.attempts))
        self.attempts += 1
        spread = base * self.jitter
        delay = max(0.0, base + self._rng.uniform(-spread, spread))
        if retry_after is not None and retry_after > delay:
            return float(retry_after)
        return delay

    def reset(self) -> None:
        self.attempts = 0
