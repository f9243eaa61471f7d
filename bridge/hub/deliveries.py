"""Bot outputs on their way to channel links: at-least-once, in order per binding.

Each binding has one `BindingOutbox`. Outputs wait in it, in the order they were made,
until a link claiming the binding acks them. Sending is pipelined (up to `window`
un-acked per binding) so one slow round trip does not stall a busy chat; an output whose
link drops, or whose answer does not come in time, goes back to waiting and is sent
again — with the same `event_id`, so the bridge can drop the repeat. A retryable error is
retried with backoff (that output may then arrive after later ones; `seq` orders a run);
a non-retryable one drops the output with a log line.

With `rows` (the hub always passes them) every output is also kept in `hub.db` until it is
acked or dropped, and the pump flushes those writes before it sends: what a link has seen,
a restart still has, and replays with the same `event_id` (`Outboxes.restore`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bridge.bcn.connection import Connection
from bridge.bcn.errors import BcnError, ConnectionClosed
from bridge.hub.delivery_rows import DeliveryRows, StoredDelivery
from bridge.retry import Backoff

log = logging.getLogger(__name__)

LinksFor = Callable[[str], list[Connection]]
"""The live link connections that claim a binding."""


@dataclass(slots=True)
class Delivery:
    event_id: str
    params: dict[str, Any]
    created: float
    backoff: Backoff | None = None
    retry_at: float = 0.0


@dataclass(frozen=True, slots=True)
class OutboxLimits:
    max_pending: int = 10_000
    max_age: float = 86_400.0
    window: int = 64
    timeout: float = 30.0
    retry_initial: float = 0.5
    retry_maximum: float = 30.0


class BindingOutbox:
    def __init__(
        self, binding_id: str, links: LinksFor, limits: OutboxLimits,
        rows: DeliveryRows | None = None,
    ) -> None:
        self.binding_id = binding_id
        self._links = links
        self._limits = limits
        self._rows = rows
        self._pending: OrderedDict[str, Delivery] = OrderedDict()
        self._in_flight: dict[str, Connection] = {}
        self._wake = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._owner: Connection | None = None
        """The one link this binding's outputs go to while it lives (see `_send`)."""
        self._task = asyncio.create_task(self._run(), name=f"outbox-{binding_id}")

    def put(self, delivery: Delivery, *, save: bool = True) -> None:
        """Queue an output; `save=False` for one restored from `hub.db` (already there)."""
        self._pending[delivery.event_id] = delivery
        if save and self._rows is not None:
            self._rows.saved(self.binding_id, delivery.event_id, delivery.params,
                             delivery.created)
        while len(self._pending) > self._limits.max_pending:
            event_id, _ = self._pending.popitem(last=False)
            self._in_flight.pop(event_id, None)
            self.forget(event_id)
            log.warning("binding %s: dropped undelivered output %s (over %d waiting)",
                        self.binding_id, event_id, self._limits.max_pending)
        self._wake.set()

    def forget(self, event_id: str) -> None:
        """Delete the stored copy of an output that is acked or dropped."""
        if self._rows is not None:
            self._rows.removed(event_id)

    def wake(self) -> None:
        self._wake.set()

    @property
    def waiting(self) -> int:
        """Outputs not acked and not on their way to a live link: what a new link replays."""
        return len(self._pending) - len(self._in_flight)

    @property
    def unacked(self) -> int:
        return len(self._pending)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._send_ready()
            except Exception:
                log.exception("binding %s: delivery pump failed", self.binding_id)

    async def _send_ready(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        self._drop_expired(now)
        if self._rows is not None:
            await self._rows.flush()  # durable before any link sees it
        next_retry: float | None = None
        failed: set[Connection] = set()
        for event_id, delivery in list(self._pending.items()):
            if event_id in self._in_flight or event_id not in self._pending:
                continue
            if delivery.retry_at > now:
                next_retry = min(next_retry or delivery.retry_at, delivery.retry_at)
                continue
            if len(self._in_flight) >= self._limits.window:
                break
            if not await self._send(event_id, delivery, failed):
                break
        if next_retry is not None:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = loop.call_at(next_retry, self._wake.set)

    async def _send(self, event_id: str, delivery: Delivery, failed: set[Connection]) -> bool:
        """Put one output on the wire to a live link; False when no link can take it.

        Every output of a binding goes to one link, its owner, for as long as that link
        lives: a run's deltas and its final reach one bridge instance, which posts and edits
        them in order. Handing them out in turn put one run's preview edits and its final on
        two instances, each posting or editing on its own (a final edited back to a preview,
        a final posted twice). When the owner drops (or its socket fails a send) the next
        live link becomes the owner, and what was in flight goes to it.

        A link whose socket fails the send is skipped for the rest of this pass, and the
        output goes to another link at once rather than waiting for the next wake-up.
        """
        while True:
            links = [conn for conn in self._links(self.binding_id)
                     if not conn.closed and conn not in failed]
            if not links:
                return False
            if self._owner not in links:
                if self._owner is not None:
                    log.info("binding %s: its outputs move to another link", self.binding_id)
                self._owner = links[0]
            conn = self._owner
            self._in_flight[event_id] = conn
            try:
                answer = await conn.send_request(
                    "channel.deliver", delivery.params, timeout=self._limits.timeout
                )
            except ConnectionClosed:
                self._in_flight.pop(event_id, None)
                failed.add(conn)
                continue
            answer.add_done_callback(lambda f, e=event_id, c=conn: self._answered(e, c, f))
            return True

    def _answered(self, event_id: str, conn: Connection, answer: asyncio.Future[Any]) -> None:
        if self._in_flight.get(event_id) is conn:
            del self._in_flight[event_id]
        self._wake.set()
        if answer.cancelled():
            return
        error = answer.exception()
        if error is None:
            if self._pending.pop(event_id, None) is not None:
                self.forget(event_id)
        elif isinstance(error, BcnError) and error.retryable:
            delivery = self._pending.get(event_id)
            if delivery is not None:
                if delivery.backoff is None:
                    delivery.backoff = Backoff(self._limits.retry_initial,
                                               self._limits.retry_maximum)
                after = None if error.retry_after_ms is None else error.retry_after_ms / 1000
                delay = delivery.backoff.next_delay(after)
                delivery.retry_at = asyncio.get_running_loop().time() + delay
        elif isinstance(error, BcnError):
            if self._pending.pop(event_id, None) is not None:
                self.forget(event_id)
            log.warning("binding %s: link refused output %s (%s); dropped",
                        self.binding_id, event_id, error.code)
        # ConnectionClosed / TimeoutError: it stays pending and goes out again.

    def _drop_expired(self, now: float) -> None:
        while self._pending:
            event_id, delivery = next(iter(self._pending.items()))
            if now - delivery.created <= self._limits.max_age:
                return
            self._pending.popitem(last=False)
            self._in_flight.pop(event_id, None)
            self.forget(event_id)
            log.warning("binding %s: dropped output %s, undelivered for over %.0fs",
                        self.binding_id, event_id, self._limits.max_age)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


class Outboxes:
    """One outbox per binding, made on first use."""

    def __init__(
        self, links: LinksFor, limits: OutboxLimits, rows: DeliveryRows | None = None
    ) -> None:
        self._links = links
        self._limits = limits
        self._rows = rows
        self._by_binding: dict[str, BindingOutbox] = {}

    def for_binding(self, binding_id: str) -> BindingOutbox:
        outbox = self._by_binding.get(binding_id)
        if outbox is None:
            outbox = BindingOutbox(binding_id, self._links, self._limits, self._rows)
            self._by_binding[binding_id] = outbox
        return outbox

    def restore(self, stored: dict[str, list[StoredDelivery]]) -> int:
        """Put back what a previous run left un-acked, oldest first; returns how many.

        The bounds hold across the restart: outputs older than `max_age` and the oldest
        beyond `max_pending` per binding are dropped, each with a log line.
        """
        loop_now = asyncio.get_running_loop().time()
        kept = 0
        for binding_id, deliveries in stored.items():
            outbox = self.for_binding(binding_id)
            for item in deliveries:
                if item.age > self._limits.max_age:
                    outbox.forget(item.event_id)
                    log.warning("binding %s: dropped output %s, undelivered for over %.0fs",
                                binding_id, item.event_id, self._limits.max_age)
                    continue
                outbox.put(Delivery(item.event_id, item.params, loop_now - item.age),
                           save=False)
            kept += outbox.unacked
            if outbox.unacked:
                log.info("binding %s: %d undelivered output(s) restored, replayed when a "
                         "link claims it", binding_id, outbox.unacked)
        return kept

    def waiting(self, binding_id: str) -> int:
        outbox = self._by_binding.get(binding_id)
        return 0 if outbox is None else outbox.waiting

    def wake(self, binding_ids: list[str]) -> None:
        for binding_id in binding_ids:
            outbox = self._by_binding.get(binding_id)
            if outbox is not None:
                outbox.wake()

    def pending_total(self) -> int:
        """Deliveries not acked yet, over every binding (for `/metrics`)."""
        return sum(outbox.unacked for outbox in self._by_binding.values())

    async def close(self) -> None:
        for outbox in self._by_binding.values():
            await outbox.close()
