"""The relay's concerns: seen ids, the durable outbox and the platform-message map.

They sit behind the same `Store` as tracked conversations, each with a few coarse
operations, so memory, SQLite and Redis implement them alike and several instances sharing
one store see the same state.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bridge.store.leases import Lease


class SeenStore(ABC):
    """Keys already handled (platform message ids, delivery event ids), for idempotency.

    A key is in one of three states: free, *claimed* (one instance is handling it now, until
    its claim's TTL runs out) or *seen* (handled for good). `claim` is how an instance starts
    on an inbound event: several instances sharing the store may be handed the same event (a
    redelivery, a gateway replay), and a check (`has`) followed by a later `add` lets two of
    them through between the two; one atomic claim lets exactly one through. Claims live
    beside the seen keys, not in them, so `add`, `note` and every `once=` write that already
    exist mark a claimed key seen unchanged — and a key seen is never claimable again.
    """

    @abstractmethod
    async def add(self, key: str, now: datetime) -> bool:
        """Remember `key`; True when it was new, False when it had been seen already.

        A claim on `key` does not make it seen: the claimant's own `add` is True. Once seen,
        the claim no longer matters (no one can claim a seen key), so the claim is left to
        expire rather than deleted here, which would cost every add a second write."""

    @abstractmethod
    async def claim(self, key: str, holder: str, now: datetime, ttl: float) -> bool:
        """Take `key` for `holder` for `ttl` seconds, atomically across instances; True if
        taken. False when it was seen already, or is claimed by anyone (the holder itself
        included: the same event handed to one instance twice at once runs once) whose
        claim has not expired. An expired claim is free: its claimant died (kill -9) without
        releasing it, and the platform's redelivery after the TTL must be handled by
        someone. Memory and SQLite judge expiry by `now`; Redis by its own clock (PX), so
        instances need not agree on the time."""

    @abstractmethod
    async def release(self, key: str, holder: str) -> None:
        """Give up `holder`'s claim on `key` (its handling failed, so a redelivery may
        retry at once); a claim of someone else's, or a seen key, is left as it is."""

    @abstractmethod
    async def claimant(self, key: str) -> str | None:
        """Who holds a claim on `key` now (None when it is free or seen). Read when a claim
        is refused, to tell a live claimant from a process that is known to have died."""

    @abstractmethod
    async def take_over(self, key: str, dead: str, holder: str, now: datetime,
                        ttl: float) -> bool:
        """Move the claim on `key` from `dead` to `holder`, atomically: only while `dead`
        still holds it and the key is not seen. For a claimant known to have ended (a
        process of this host that is no longer running, `bridge.core.instance`), whose
        claim would otherwise hold the platform's redelivery until its TTL runs out."""

    async def note(self, key: str, now: datetime) -> bool:
        """`add`, without waiting for the key to be durable (True when it was new): for a
        key whose loss in a crash costs only a repeat that is harmless or wanted — a message
        the hub accepted, whose `msg_id` is the hub's idempotency key (it answers
        `duplicate`); a delivery posted into rooms that die with the process (see
        `Outbox.post_now`). A store whose writes cost nothing to wait for simply adds."""
        return await self.add(key, now)

    @abstractmethod
    async def has(self, key: str) -> bool:
        """Was `key` seen already? (Asking does not remember it.)"""

    @abstractmethod
    async def seen_at(self, keys: Sequence[str]) -> dict[str, datetime]:
        """When each of `keys` was first seen (e.g. when a message was accepted); the keys
        never seen are left out. One read for several: a bot's reply asks at once whether
        its delivery is a replay and when the message it answers arrived."""

    @abstractmethod
    async def prune(self, before: datetime) -> int:
        """Forget keys first seen before the cut-off; returns how many (claims that expired
        before it go too, uncounted: a claim's TTL is minutes, the cut-off days)."""


@dataclass(slots=True)
class OutboxItem:
    """One logical output for one chat lane, already rendered and split into parts.

    `sent` holds the platform message id of every part delivered so far, so a restart
    resumes after the last delivered part instead of posting it twice.
    """

    lane: str
    kind: str
    sender_label: str
    parts: list[str]
    conversation: str = ""
    run_id: str | None = None
    reply_to: str | None = None
    protocol: dict[str, Any] | None = None
    created_at: datetime | None = None
    id: int = 0
    sent: list[str | None] = field(default_factory=list)
    from_human: bool = False
    """Posted on a person's behalf (the card of their `/ask`), not by a bot."""
    inbound_at: datetime | None = None
    """When the message this reply answers reached the bridge (for `bcn_bridge_relay_seconds`)."""
    card: dict[str, Any] | None = None
    """A bot's question shown as a card with buttons (`bridge.core.cards.Card` record)."""

    def __post_init__(self) -> None:
        if len(self.sent) < len(self.parts):
            self.sent.extend([None] * (len(self.parts) - len(self.sent)))

    def to_body(self) -> dict[str, Any]:
        """The JSON a store keeps (id and created_at are kept beside it)."""
        return {
            "lane": self.lane, "kind": self.kind, "sender_label": self.sender_label,
            "parts": self.parts, "conversation": self.conversation, "run_id": self.run_id,
            "reply_to": self.reply_to, "protocol": self.protocol, "sent": self.sent,
            **({"from_human": True} if self.from_human else {}),
            **({"inbound_at": self.inbound_at.isoformat()} if self.inbound_at else {}),
            **({"card": self.card} if self.card else {}),
        }

    @classmethod
    def from_body(
        cls, body: dict[str, Any], *, id: int = 0, created_at: datetime | None = None
    ) -> OutboxItem:
        return cls(
            lane=body["lane"], kind=body["kind"], sender_label=body["sender_label"],
            parts=list(body["parts"]), conversation=body.get("conversation", ""),
            run_id=body.get("run_id"), reply_to=body.get("reply_to"),
            protocol=body.get("protocol"), created_at=created_at, id=id,
            sent=list(body.get("sent") or []), from_human=bool(body.get("from_human")),
            inbound_at=_when(body.get("inbound_at")), card=body.get("card"),
        )


def _when(value: Any) -> datetime | None:
    """An ISO timestamp kept in a body; None when absent or unreadable."""
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


class OutboxStore(ABC):
    """Outputs waiting for their platform, in order per lane, surviving restarts."""

    @abstractmethod
    async def append(
        self, item: OutboxItem, *, once: str | None = None, now: datetime | None = None
    ) -> int | None:
        """Durably queue `item`; assigns and returns its id (increasing in queue order).

        With `once`, the key is added to the `seen` concern in the same transaction, and an
        item whose key was seen already is not queued (None is returned): a delivery that is
        replayed after a crash is queued exactly once, never lost between the two writes.
        """

    @abstractmethod
    async def pending(
        self, lane: str | None = None, limit: int | None = None
    ) -> list[OutboxItem]:
        """Items not completed yet (of one lane, when given), in queue order."""

    @abstractmethod
    async def lanes(self) -> list[str]:
        """The lanes that have items not completed yet."""

    @abstractmethod
    async def count(self) -> int:
        """Items not completed yet, in every lane: the outbox depth, counted without reading
        the items (a backlog of 100,000 after an outage must not be loaded to be counted)."""

    @abstractmethod
    async def record_part(
        self,
        item_id: int,
        index: int,
        message_id: str,
        *,
        remember: Mapping[str, dict[str, Any]] | None = None,
        now: datetime | None = None,
        done: bool = False,
        fence: Lease | None = None,
    ) -> None:
        """Part `index` of the item is on the platform as `message_id`.

        In the same transaction: `remember` (message-map records, e.g. which platform
        message the bridge posted) is written with time `now`, and with `done` the item
        leaves the queue — one write where a posted reply used to take three.

        With `fence` (the lane lease the writer holds), nothing is written and `StaleLease`
        is raised when a newer grant of that lease exists: a worker that lost its lane does
        not mark parts its successor will post, nor end an item the successor is sending.
        """

    @abstractmethod
    async def complete(self, item_id: int, *, fence: Lease | None = None) -> None:
        """The item is done (delivered, superseded or given up) and leaves the queue;
        `fence` as for `record_part`."""


@dataclass(slots=True)
class SpoolEntry:
    """One human message accepted while the BCN link could not take it.

    `lane` and `binding` (the binding's `channel|chat|thread` key) say where it came from;
    `params` are its `channel.inbound` params without `binding_id`, which is resolved when
    the message is finally sent (the link may never have been up when it was accepted).
    """

    lane: str
    binding: str
    params: dict[str, Any]
    created_at: datetime | None = None
    id: int = 0


class SpoolStore(ABC):
    """Human messages waiting for the BCN link, in arrival order, surviving restarts."""

    @abstractmethod
    async def append(self, entry: SpoolEntry, *, once: str, now: datetime) -> int | None:
        """Queue `entry` and remember `once` in `seen`, atomically; None if `once` was seen
        already (the message was accepted before and must not be queued twice)."""

    @abstractmethod
    async def pending(self, limit: int = 100) -> list[SpoolEntry]:
        """The oldest `limit` entries, in arrival order."""

    @abstractmethod
    async def complete(self, entry_id: int) -> None:
        """The entry reached the BCN (or was given up) and leaves the spool."""

    @abstractmethod
    async def count(self) -> int:
        """How many entries wait."""


class MessageMapStore(ABC):
    """Small JSON records keyed by platform message, run or source message.

    Used for: which platform messages the bridge posted (own-echo filter, replies to a
    CLARIFY), the message a streaming run is being edited into, and which tracked request
    an inbound message started (so the bot's reply can be wrapped as its RESPONSE).
    """

    @abstractmethod
    async def put(self, key: str, value: dict[str, Any], now: datetime) -> None: ...

    @abstractmethod
    async def get(self, key: str) -> dict[str, Any] | None: ...

    @abstractmethod
    async def prune(self, before: datetime) -> int: ...
