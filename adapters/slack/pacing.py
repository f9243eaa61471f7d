"""Pacing `chat.update` for a whole workspace, however many replies stream at once.

The outbox already spaces edits of one message (`min_edit_interval`) and supersedes old
previews, but Slack's limit for `chat.update` (Tier 3, about 50 a minute) is per workspace:
five channels streaming at once would each stay within their own pace and still be refused.
`Pacer` is one queue for the account's edits — callers wait their turn in order (never
dropped: the newest text is what the outbox hands over when the turn comes), with short
bursts allowed — and a 429 holds every caller for the `Retry-After` Slack asked for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class Pacer:
    """At most `per_minute` calls a minute, `burst` of them back to back (GCRA)."""

    def __init__(
        self,
        per_minute: float,
        *,
        burst: int = 3,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.interval = 60.0 / per_minute
        self.tolerance = max(0, burst - 1) * self.interval
        self._clock = clock
        self._sleep = sleep
        self._theoretical = 0.0
        self._turns = asyncio.Lock()

    def _now(self) -> float:
        return self._clock() if self._clock is not None else asyncio.get_running_loop().time()

    def wait_time(self) -> float:
        """Seconds until the next caller's turn (0 when a call may go now)."""
        return max(0.0, self._theoretical - self.tolerance - self._now())

    async def wait(self) -> None:
        """Return when the next call may go; callers get their turns in the order they came."""
        async with self._turns:
            now = self._now()
            theoretical = max(self._theoretical, now)
            allowed_at = theoretical - self.tolerance
            if allowed_at > now:
                await self._sleep(allowed_at - now)
            self._theoretical = theoretical + self.interval

    def hold(self, seconds: float) -> None:
        """Slack said 429: nobody's turn comes before `seconds` from now."""
        self._theoretical = max(self._theoretical, self._now() + seconds + self.tolerance)
