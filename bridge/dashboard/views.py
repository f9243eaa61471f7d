"""The JSON the dashboard page shows, built from the store, the relay and its metrics.

Everything here reads; nothing writes. Conversations come a page at a time from the store's
index (`ConversationStore.page`), so 100,000 tracked conversations cost the page what 50 do.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bridge.core.binding import Binding
from bridge.core.outbox import Lane
from bridge.core.spool import binding_key
from bridge.dashboard.bots import BotActivity
from bridge.dashboard.health import HealthWatch
from bridge.dashboard.traffic import Traffic, by_label, samples
from bridge.store.loop_guard import HeldLane
from bridge.store.pauses import Paused
from bridge.store.records import Conversation
from bridge.tracking.vocabulary import (
    CLARIFYING,
    DONE,
    EXPIRED_STATUS,
    FAILED,
    OPEN,
    PARTIAL,
    TIMED_OUT,
)

if TYPE_CHECKING:
    from bridge.core.relay import Relay

STATES: dict[str, tuple[str, ...]] = {
    "open": (OPEN,),
    "clarifying": (CLARIFYING,),
    "answered": (DONE, PARTIAL),
    "failed": (FAILED,),
    "timeout": (TIMED_OUT,),
    "expired": (EXPIRED_STATUS,),
}
"""The page's state filter → the tracker's statuses."""

LABELS = {OPEN: "open", CLARIFYING: "clarifying", DONE: "answered", PARTIAL: "answered",
          FAILED: "failed", TIMED_OUT: "timed out", EXPIRED_STATUS: "expired"}


def statuses_for(state: str | None) -> Collection[str] | None:
    """The statuses of a state filter (None: all); ValueError for an unknown one."""
    if not state:
        return None
    if state not in STATES:
        raise ValueError(f"unknown state {state!r}; expected one of {', '.join(STATES)}")
    return STATES[state]


def conversation_item(
    conv: Conversation, now: datetime, *, history: bool = False
) -> dict[str, Any]:
    item = conv.to_dict()
    entries = item.pop("history")
    item["state_label"] = LABELS.get(conv.status, conv.status)
    item["age_seconds"] = round((now - conv.created_at).total_seconds(), 1)
    item["time_left_seconds"] = (
        round((conv.deadline - now).total_seconds(), 1) if conv.deadline else None
    )
    item["chain"] = [entry.type for entry in conv.history]
    if history:
        item["history"] = entries
    return item


def counters(relay: Relay) -> dict[str, Any]:
    metrics = relay.metrics

    def per_channel(metric: Any) -> dict[str, int]:
        return {channel: int(n) for channel, n in by_label(metric, "channel").items()}

    held = [{"reason": labels["reason"], "channel": labels["channel"], "count": int(value)}
            for labels, value in samples(metrics.held, "_total")]
    dropped = [{"reason": labels["reason"], "channel": labels["channel"],
                "direction": labels["direction"], "count": int(value)}
               for labels, value in samples(metrics.dropped, "_total")]
    return {"messages_in": per_channel(metrics.messages_in),
            "messages_out": per_channel(metrics.messages_out),
            "paced": per_channel(metrics.paced),
            "paced_seconds": {channel: round(seconds, 1) for channel, seconds
                              in by_label(metrics.paced_seconds, "channel").items()},
            "held": held, "dropped": dropped}


class Views:
    def __init__(self, relay: Relay, health: HealthWatch, bots: BotActivity,
                 traffic: Traffic) -> None:
        self.relay = relay
        self.health = health
        self.bots = bots
        self.traffic = traffic

    @property
    def now(self) -> datetime:
        return self.relay.ctx.clock()

    async def overview(self) -> dict[str, Any]:
        ctx = self.relay.ctx
        store = ctx.store
        groups = sorted({binding.group for binding in ctx.bindings})
        group_bots = {group: await ctx.state.group_bots(group) for group in groups}
        paused = await ctx.pauses.all()
        held = await store.loop_guard.held_lanes()
        now = self.now
        return {
            "now": now.isoformat(),
            "instance": self.relay.instance,
            "health": self.health.read(),
            "bots": self.bots.rows(group_bots, now),
            "counts": await store.conversations.counts(),
            "counters": counters(self.relay),
            "traffic": self.traffic.to_dict(),
            "bindings": [self._binding(binding, paused) for binding in ctx.bindings],
            "held_lanes": [self._held(lane) for lane in held],
        }

    @staticmethod
    def _binding(binding: Binding, paused: dict[str, Paused]) -> dict[str, Any]:
        key = binding_key(binding)
        pause = paused.get(key)
        return {"key": key, "channel": binding.channel, "chat": binding.chat,
                "thread": binding.thread, "group": binding.group, "paused": pause is not None,
                "paused_by": pause.by if pause else None,
                "paused_at": pause.at.isoformat() if pause else None}

    def _held(self, lane: HeldLane) -> dict[str, Any]:
        resolved = self.relay.ctx.resolve(Lane.from_key(lane.lane))
        return {"lane": lane.lane, "binding": binding_key(resolved[1]) if resolved else None,
                "held": lane.held, "held_over": lane.held_over}

    async def binding_view(self, binding: Binding) -> dict[str, Any]:
        """One binding as the overview shows it (after a pause or resume)."""
        return self._binding(binding, await self.relay.ctx.pauses.all())

    async def conversations(self, *, state: str | None, chat: str | None, bot: str | None,
                            cursor: str | None, limit: int) -> dict[str, Any]:
        store = self.relay.ctx.store.conversations
        page = await store.page(statuses=statuses_for(state), chat=chat or None,
                                bot=bot or None, cursor=cursor or None, limit=limit)
        now = self.now
        return {"items": [conversation_item(conv, now) for conv in page.items],
                "next_cursor": page.next_cursor,
                "counts": await store.counts(chat=chat or None, bot=bot or None)}

    async def conversation(self, request_id: str) -> dict[str, Any] | None:
        conv = await self.relay.ctx.tracker.get(request_id)
        if conv is None:
            return None
        item = conversation_item(conv, self.now, history=True)
        card = await self.relay.decisions.latest_card(conv.request_id)
        item["card"] = card.view() if card is not None else None
        return item
