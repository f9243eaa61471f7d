"""Every key the Redis store writes, in one place, all under one prefix.

Each family is `<prefix>:<name>` or `<prefix>:<name>:<variable part>`, and no family's fixed
part is a prefix of another's (`conv:` vs `convs:`, `run:` vs `runs:`), so a request id, lane
or lease name can never make one family's key collide with another's. docs/tracking.md
lists them with their types and TTLs.
"""

from __future__ import annotations

from dataclasses import dataclass

# A lane is paused until a human speaks there; if nobody ever does, its pause and what it held
# are forgotten after this long without a bot message or a hold.
HELD_TTL_MS = 7 * 24 * 3600 * 1000
# An unpaused lane's state only counts bot messages within the window; a little past the
# window it says nothing any more and may go.
GUARD_SLACK_MS = 60 * 1000
# Deltas of a run that never ended (its bot died mid-stream).
RUN_TTL_MS = 24 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class Keys:
    prefix: str

    def _key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    # Conversations: a list per conversation ([record, history entry, …]) and its indexes.
    def conversation(self, request_id: str) -> str:
        return self._key("conv", request_id)

    @property
    def created(self) -> str:
        """zset of every conversation by created_at (µs): `find` with no filter."""
        return self._key("convs", "created")

    @property
    def deadlines(self) -> str:
        """zset of waiting conversations by deadline (µs): `due`."""
        return self._key("convs", "deadline")

    @property
    def finished(self) -> str:
        """zset of finished conversations by updated_at (µs): `remove_finished`."""
        return self._key("convs", "finished")

    def by_field(self, field: str, value: str) -> str:
        """zset of request ids whose `field` (status, from, to, chat; bot: any of from, to
        or original_from, casefolded) has `value`, by created_at (µs): `find`, `page`."""
        return self._key("convs", f"by-{field}", value)

    def count(self, chat: str | None = None, bot: str | None = None) -> str:
        """hash status -> how many conversations (of the chat, of the folded bot, of both)."""
        if bot is None:
            if chat is None:
                return self._key("convs", "count")
            return self._key("convs", "count-chat", chat)
        if chat is None:
            return self._key("convs", "count-bot", bot)
        return self._key("convs", "count-pair", f"{len(chat)}:{chat}:{bot}")  # unambiguous

    # Relay.
    @property
    def seen(self) -> str:
        """zset of seen keys by when they were first seen (µs)."""
        return self._key("seen")

    def claim(self, key: str) -> str:
        """string: the holder handling seen key `key` now. PX'd with the claim's TTL."""
        return self._key("claim", key)

    @property
    def message_map(self) -> str:
        """hash key -> JSON value."""
        return self._key("map")

    @property
    def message_map_ages(self) -> str:
        """zset of message-map keys by when they were last put (µs)."""
        return self._key("map", "at")

    def queue(self, name: str) -> QueueKeys:
        return QueueKeys(self._key(name, "next-id"), self._key(name, "queue"),
                         self._key(name, "item", ""), self._key(name, "lane", ""),
                         self._key(name, "lanes"))

    # Loop guard.
    def guard(self, lane: str) -> str:
        """hash: recent (JSON list), paused (0/1), held_over (int). TTL'd."""
        return self._key("guard", lane)

    def held(self, lane: str) -> str:
        """list of held outbox items (JSON). TTL'd."""
        return self._key("held", lane)

    @property
    def paused_lanes(self) -> str:
        """set of the lanes whose guard says paused (a member whose guard expired is stale
        until `held_lanes` drops it)."""
        return self._key("guards", "paused")

    # Send budgets.
    def pace(self, budget: str) -> str:
        """zset of send times (ms) of one send budget (bridge.store.pacing). TTL'd."""
        return self._key("pace", budget)

    # Pauses.
    @property
    def pauses(self) -> str:
        """hash binding key -> JSON {by, at (µs)}: the bindings an operator paused."""
        return self._key("pauses")

    # Streams.
    def run(self, run_id: str) -> str:
        """hash seq -> delta text. TTL'd."""
        return self._key("run", run_id)

    def run_prefix(self) -> str:
        """`run(run_id)` is this + run_id (what PRUNE deletes per member)."""
        return self._key("run", "")

    @property
    def run_ages(self) -> str:
        """zset of run ids by their latest delta (µs)."""
        return self._key("runs", "at")

    # Leases.
    def lease(self, name: str) -> str:
        """string `token:holder`, expiring with the lease (PX)."""
        return self._key("lease", name)

    def lease_token(self, name: str) -> str:
        """The lease's fencing counter (INCR). Never expires: tokens must only grow."""
        return self._key("lease-token", name)


@dataclass(frozen=True, slots=True)
class QueueKeys:
    """An id-ordered durable queue (the outbox, the spool)."""

    next_id: str
    """string counter (INCR): ids increase in queue order."""
    order: str
    """zset of queued ids, scored by id."""
    item_prefix: str
    """+ id: list [entry JSON, then one JSON element per part sent (outbox)]."""
    group_prefix: str
    """+ group (an outbox lane): zset of that group's queued ids, scored by id."""
    groups: str
    """set of the groups that have queued entries."""

    def item(self, item_id: int) -> str:
        return f"{self.item_prefix}{item_id}"

    def group(self, name: str) -> str:
        return f"{self.group_prefix}{name}"
