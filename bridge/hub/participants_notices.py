"""`channel.participants.changed`, at most once per group per interval.

Every registration, auto-join, connect and disconnect changes a group's participants, and
every link bound to the group answers a notice with a full `channel.participants` request.
Sent once per change, a flood of 2,000 registrations made 2,000 notices per link and 2,000
full listings of a growing group (quadratic work: the hub's memory went past 700 MB and
chats waited tens of seconds). So the first change of a quiet group is announced at once
and the changes that follow within `interval` are announced together, once, when it ends:
a link always hears of the last change, never more than once per interval.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class ParticipantsNotices:
    """Throttles the notices of each group: leading edge at once, trailing edge once."""

    def __init__(
        self,
        interval: float,
        send: Callable[[str], None],
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.interval = interval
        self._send = send
        """Sends the notice of one group to its links (spawns the writes, never blocks)."""
        self._clock = clock
        self._last: dict[str, float] = {}
        """When each group's last notice went out (one entry per configured group)."""
        self._due: dict[str, asyncio.TimerHandle] = {}
        """Groups whose changes wait for the end of their interval."""
        self.sent = 0
        """Notices sent so far, one per group (what `/metrics` and the tests read)."""
        self.listings = 0
        """`channel.participants` requests answered: what the notices cost the links."""

    def _now(self) -> float:
        return self._clock() if self._clock is not None else asyncio.get_running_loop().time()

    def changed(self, group_id: str) -> None:
        """The participants of `group_id` changed: announce it now, or at the interval's end."""
        if group_id in self._due:
            return  # already announced at the end of this interval
        now = self._now()
        last = self._last.get(group_id)
        if last is None or self.interval <= 0 or now - last >= self.interval:
            self._fire(group_id, now)
            return
        delay = last + self.interval - now
        self._due[group_id] = asyncio.get_running_loop().call_later(delay, self._end, group_id)

    def _end(self, group_id: str) -> None:
        self._due.pop(group_id, None)
        self._fire(group_id, self._now())

    def _fire(self, group_id: str, now: float) -> None:
        self._last[group_id] = now
        self.sent += 1
        self._send(group_id)

    def close(self) -> None:
        """Stop: the changes still waiting are not announced (links refresh when they return)."""
        for handle in self._due.values():
            handle.cancel()
        self._due.clear()
