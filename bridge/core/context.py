"""What every relay step needs: the store, tracker, link, outbox, adapters and bindings.

One object, built once by the `Relay`, so pipeline steps stay small functions of
(context, message) instead of each holding its own copies of shared state. Services and
config only: live state is in the store, and what keeps one process orderly belongs to the
stage that needs it (the lane's order lock and the typing times: `bridge/core/posting.py`;
the once-per-chat "unbound" log: `InboundPipeline`). The pipelines themselves are
`bridge/core/inbound.py` and `outbound.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bridge.background import Background
from bridge.config.sections import CommandNames
from bridge.core.adapter import Adapter
from bridge.core.binding import Binding, BindingIndex
from bridge.core.events import RelayEvents
from bridge.core.link import LinkClient
from bridge.core.outbox import Lane, Outbox
from bridge.core.pauses import BindingPauses
from bridge.core.relay_state import GroupBots, RelayState
from bridge.core.spool import InboundSpool
from bridge.metrics import BridgeMetrics
from bridge.store.base import Store
from bridge.store.records import Conversation
from bridge.tracking import Tracker

if TYPE_CHECKING:
    from bridge.core.decisions import Decisions

log = logging.getLogger(__name__)

BRIDGE_NAME = "bcn-bridge"


@dataclass(slots=True)
class RelayContext:
    store: Store
    tracker: Tracker
    outbox: Outbox
    link: LinkClient
    spool: InboundSpool
    state: RelayState
    """Sessions, group bots, waiting questions: records in the store, not in this object."""
    adapters: dict[str, Adapter]
    bindings: BindingIndex
    """The configured bindings, found by chat (config: the same for the bridge's life)."""
    clock: Callable[[], datetime]
    pauses: BindingPauses
    """Bindings an operator paused (their human messages reach the bots to observe only)."""
    events: RelayEvents
    """What watchers (the dashboard) are told as it happens; publishing never waits."""
    commands: CommandNames = field(default_factory=CommandNames)
    bridge_name: str = BRIDGE_NAME
    max_reply_chars: int = 100_000
    """Longest bot output shown; longer ones are cut (see `OutboundPipeline.truncated`)."""
    background: Background = field(default_factory=lambda: Background("relay-io"))
    decisions: Decisions | None = None
    """Cards out, taps in (set by the relay once its inbound pipeline exists)."""
    metrics: BridgeMetrics = field(default_factory=BridgeMetrics)

    def resolve(self, lane: Lane) -> tuple[Adapter, Binding] | None:
        adapter = self.adapters.get(lane.channel)
        binding = self.bindings.find(lane.channel, lane.chat_id, lane.thread_id)
        if adapter is None or binding is None:
            return None
        return adapter, binding

    async def bots(self, binding: Binding) -> GroupBots:
        """The bots of the binding's group, as the hub last said."""
        return await self.state.group_bots(binding.group)

    async def track(self, parsed: Any, lane: Lane) -> Conversation:
        """Track a protocol message seen in this lane and refresh the lane's request panel;
        returns the conversation (its `request_id` is the store key: scoped to this chat
        when another chat used the id first)."""
        conversation = await self.tracker.track(parsed, self.clock(), chat=lane.key)
        if conversation.status == "clarifying" and not await self.state.may_clarify(lane.key):
            await self.state.set_may_clarify(lane.key, True)
        await self.refresh_panel(lane)
        return conversation

    async def refresh_panel(self, lane: Lane) -> None:
        adapter = self.adapters.get(lane.channel)
        if adapter is None or not adapter.capabilities.request_panel:
            return
        open_ = await self.tracker.list(status=("open", "clarifying"), chat=lane.key)
        items = [
            {key: value for key, value in conv.to_dict().items() if key != "history"}
            for conv in open_
        ]
        try:
            await adapter.update_requests(lane.chat_id, items)
        except Exception:
            log.exception("could not update the request panel of %s", lane.key)
