"""The loop guard's state per chat lane, and the bot outputs it holds back, in the store.

Two bots answering each other can talk a chat to death; the guard pauses a lane after
`limit` bot messages within `window` seconds without a human. What the bots say while a
lane is paused is *held*, not dropped: kept in the store (so every instance sees the same
pause and a restart keeps what was held) and moved into the outbox when a human speaks.

`guard_turn` is the one transition every backend applies (Redis runs the same steps in a
script); it is a pure function of plain data so the rule lives in exactly one place.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from bridge.store.relay import OutboxItem

Verdict = Literal["allow", "tripped", "paused"]
"""allow: show it; tripped: this message crossed the limit (hold it, tell the chat once);
paused: the lane was paused already (hold it)."""

Posted = Literal["allow", "tripped", "paused", "seen"]
"""What `LoopGuardStore.post` did: a verdict, or "seen" (a replay: nothing done)."""


@dataclass(slots=True)
class LaneGuard:
    """One lane's guard: recent bot messages (epoch seconds), the pause, what was held."""

    recent: list[float] = field(default_factory=list)
    paused: bool = False
    held_over: int = 0
    """Held outputs beyond what is kept (counted, so the chat can be told)."""

    def to_json(self) -> dict[str, object]:
        return {"recent": self.recent, "paused": self.paused, "held_over": self.held_over}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> LaneGuard:
        recent = data.get("recent")
        return cls(
            recent=[float(t) for t in recent] if isinstance(recent, list) else [],
            paused=bool(data.get("paused")),
            held_over=int(data.get("held_over") or 0),  # type: ignore[call-overload]
        )


def guard_turn(state: LaneGuard, *, limit: int, window: float, now: float) -> Verdict:
    """Count one bot message in the lane (mutates `state`)."""
    if state.paused:
        return "paused"
    state.recent = [at for at in state.recent if at > now - window]
    if len(state.recent) >= limit:
        state.paused = True
        state.recent = []
        return "tripped"
    state.recent.append(now)
    return "allow"


@dataclass(slots=True)
class Released:
    """What a human's message released from a paused lane: held outputs, now queued in the
    outbox (in the order they were held), and how many more were held but not kept."""

    items: list[OutboxItem]
    not_kept: int = 0


@dataclass(frozen=True, slots=True)
class HeldLane:
    """A lane paused right now, as the operator's dashboard shows it."""

    lane: str
    """The lane key."""
    held: int
    """Outputs kept (what a release would post)."""
    held_over: int
    """Held but not kept (only counted)."""


class LoopGuardStore(ABC):
    @abstractmethod
    async def bot_spoke(
        self, lane: str, *, limit: int, window: float, now: datetime
    ) -> Verdict:
        """Count one bot message, atomically with every other instance's."""

    @abstractmethod
    async def is_paused(self, lane: str) -> bool: ...

    @abstractmethod
    async def quiet(self, lane: str) -> bool:
        """Is the lane quiet: its guard counts nothing (no bot spoke there since a human last
        did, and it is not paused) and nothing of it waits in the outbox, whoever queued it?
        Then a reply to a person leaves the guard as it is (see `post`'s `answers_human`) and
        overtakes nothing, so it can be posted at once without a write (`Outbox.post_now`).

        One read for both: every reply to a person asks, and on SQLite a statement on the
        hot path costs the relay a few percent of its CPU (docs/performance.md)."""

    @abstractmethod
    async def hold(
        self, lane: str, item: OutboxItem, *, keep: int, once: str | None, now: datetime
    ) -> bool:
        """Hold an output of a paused lane; past `keep` held items it is only counted.

        `once` (a seen key) is remembered in the same transaction; False when it was seen
        already (a replayed delivery), and then nothing is held or counted.
        """

    @abstractmethod
    async def post(
        self,
        lane: str,
        item: OutboxItem,
        *,
        limit: int,
        window: float,
        keep: int,
        once: str | None,
        now: datetime,
        answers_human: bool = False,
    ) -> tuple[Posted, int | None]:
        """A bot's output for the lane, in one transaction: counted by the guard, then
        queued in the outbox when allowed (its id is returned) or held when the lane is
        paused; `once` is claimed in `seen` too — a replay ("seen") changes nothing.

        `answers_human`: the output answers a human's message, and is not counted while the
        lane's guard counts nothing (a reply to a person is no bot talking to bots; in a
        plain human ↔ bot exchange the guard then never writes at all).

        One write where counting, remembering the delivery and queueing took three.
        """

    @abstractmethod
    async def human_spoke(self, lane: str) -> Released | None:
        """A human wrote: reset the lane, and if it was paused move what it held into the
        outbox in one transaction (None when the lane was not paused)."""

    @abstractmethod
    async def held_lanes(self) -> list[HeldLane]:
        """Every lane paused right now, sorted by lane, with what it holds; read from an
        index of paused lanes, never by reading every lane's state."""
