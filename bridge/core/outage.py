"""Saying once that something is down, and once that it is back.

A connection to a platform that fails is retried, often every second or two, for as long
as the platform is away; a log line per attempt would bury everything else. Every
connection the bridge watches (Telegram's long polling, Slack's Socket Mode, a lease's
store) reports each attempt here instead: the first failure of an outage is one WARNING,
the ones after it go to the debug log, and the first success after it is one INFO line
with the count. `reason` and `failures` are what `Adapter.health()` names for `/readyz`.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


class OutageTracker:
    """One watched connection's outage state.

    The lines read `<who> <lost> (<reason>); <retrying>` and `<who> <back> after <n> failed
    attempt(s)`, written to `logger` (the adapter's own, so they sit with its other lines).
    """

    def __init__(
        self,
        who: str,
        *,
        lost: str,
        back: str,
        retrying: str = "retrying until it is back",
        logger: logging.Logger | None = None,
    ) -> None:
        self.who = who
        self.lost = lost
        self.back = back
        self.retrying = retrying
        self.logger = logger or log
        self.failures = 0
        """Failed attempts since the last success (0: up)."""
        self.reason: str | None = None
        """The latest failure's reason while down, None while up."""

    @property
    def is_down(self) -> bool:
        return self.failures > 0

    def down(self, reason: str) -> bool:
        """One more failed attempt; True (and a WARNING) only for the first of an outage."""
        self.failures += 1
        self.reason = reason
        if self.failures == 1:
            self.logger.warning("%s %s (%s); %s", self.who, self.lost, reason, self.retrying)
            return True
        self.logger.debug("%s still down (attempt %d): %s", self.who, self.failures, reason)
        return False

    def up(self) -> bool:
        """An attempt worked; True (and an INFO line) only when it ends an outage."""
        if not self.failures:
            return False
        self.logger.info("%s %s after %d failed attempt(s)", self.who, self.back,
                         self.failures)
        self.failures = 0
        self.reason = None
        return True
