"""The bridge's Prometheus metrics: one registry per bridge, and every metric object in it.

Each `BridgeMetrics` has its own `CollectorRegistry` (never prometheus-client's global one),
so tests that run several bridges in one process, or a bridge beside an embedded hub, keep
their numbers apart. The core counts through the few methods below — one line at the place
where the thing happens — and what is better read than counted (the link, the adapters, the
outbox and spool depth, open conversations) is sampled when `/metrics` is scraped.

docs/operations.md lists every metric and what it means.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from bridge import __version__

log = logging.getLogger(__name__)

RELAY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 20.0, 30.0,
                 60.0, 120.0, 300.0)
"""Seconds from a human's message to the bot's reply on the platform: language models take
seconds, but a rule bot answers in milliseconds, and quantiles estimated from the buckets
(the dashboard's p50/p95, Prometheus' `histogram_quantile`) are only as fine as they are."""

Sample = Callable[["BridgeMetrics"], Awaitable[None]]
"""Sets the sampled gauges; run before every scrape."""


class BridgeMetrics:
    """The metric objects of one bridge (see docs/operations.md for their meaning)."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        self.sample: Sample | None = None
        """Set by the app: reads the link, adapters and store into the sampled gauges."""
        self.messages_in = Counter(
            "bcn_bridge_messages_in_total",
            "Platform messages handed to the BCN (at once or through the spool).",
            ["channel"], registry=r,
        )
        self.messages_out = Counter(
            "bcn_bridge_messages_out_total",
            "Platform messages the bridge posted (each part of a split reply counts).",
            ["channel"], registry=r,
        )
        self.outputs_queued = Counter(
            "bcn_bridge_outputs_queued_total",
            "Outputs (bot replies, streamed previews, notices) durably queued in the outbox "
            "(a reply to a person on a platform that posts in process is posted at once).",
            ["channel", "kind"], registry=r,
        )
        self.dropped = Counter(
            "bcn_bridge_messages_dropped_total",
            "Messages not relayed, by direction (in: from a platform, out: to one) and reason.",
            ["channel", "direction", "reason"], registry=r,
        )
        self.held = Counter(
            "bcn_bridge_messages_held_total",
            "Messages kept back for later: loop_guard (bot replies held in a paused chat), "
            "link_down (human messages spooled while the BCN was unreachable).",
            ["channel", "reason"], registry=r,
        )
        self.relay_seconds = Histogram(
            "bcn_bridge_relay_seconds",
            "Seconds from a platform message reaching the bridge to the bot's final reply "
            "being posted on the platform.",
            ["channel"], buckets=RELAY_BUCKETS, registry=r,
        )
        self.outbox_retries = Counter(
            "bcn_bridge_outbox_retries_total",
            "Platform calls retried by the outbox after a transient failure (429, outage).",
            ["channel"], registry=r,
        )
        self.paced_seconds = Counter(
            "bcn_bridge_paced_seconds_total",
            "Seconds the outbox waited for room in a platform's published send limits "
            "(per chat, per group, per account) before posting or editing.",
            ["channel"], registry=r,
        )
        self.paced = Counter(
            "bcn_bridge_paced_total",
            "Platform calls that waited for room in a send budget first.",
            ["channel"], registry=r,
        )
        self.outbox_depth = Gauge(
            "bcn_bridge_outbox_depth", "Outputs queued and not yet delivered (the whole store).",
            registry=r,
        )
        self.spool_depth = Gauge(
            "bcn_bridge_spool_depth", "Human messages waiting for the BCN link (the whole store).",
            registry=r,
        )
        self.link_up = Gauge(
            "bcn_bridge_link_up", "1 while this instance's BCN channel link is connected.",
            registry=r,
        )
        self.adapter_up = Gauge(
            "bcn_bridge_adapter_up", "1 while the platform account can relay, 0 while it is down.",
            ["channel"], registry=r,
        )
        self.conversations_open = Gauge(
            "bcn_bridge_conversations_open",
            "Tracked protocol conversations waiting for an answer (open or clarifying).",
            registry=r,
        )
        self.info = Gauge(
            "bcn_bridge_info", "Always 1; the labels say which bridge this is.",
            ["version", "instance"], registry=r,
        )

    def _child(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, looked up once: prometheus_client takes a lock and
        builds a key on every `labels()` call, and the hot path counts four things per
        round trip with label values that hardly ever change. (Children are never removed.)"""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    # ------------------------------------------------------------------ what the core calls
    def accepted(self, channel: str) -> None:
        """A platform message went to the BCN (or to the spool, to go there later)."""
        self._child(self.messages_in, channel).inc()

    def drop(self, channel: str, direction: str, reason: str) -> None:
        self.dropped.labels(channel, direction, reason).inc()

    def hold(self, channel: str, reason: str) -> None:
        self.held.labels(channel, reason).inc()

    def queued(self, channel: str, kind: str) -> None:
        self._child(self.outputs_queued, channel, kind).inc()

    def posted(self, channel: str) -> None:
        """A new platform message is up (not counted again when it is edited)."""
        self._child(self.messages_out, channel).inc()

    def answered(self, channel: str, inbound_at: datetime | None, now: datetime) -> None:
        """A bot's final reply is on the platform; `inbound_at`: when its question arrived."""
        if inbound_at is not None:
            seconds = max(0.0, (now - inbound_at).total_seconds())
            self._child(self.relay_seconds, channel).observe(seconds)

    def retried(self, channel: str) -> None:
        self.outbox_retries.labels(channel).inc()

    def waited_for_budget(self, channel: str, seconds: float) -> None:
        """A platform call waited `seconds` for room in its send budgets."""
        self._child(self.paced, channel).inc()
        self._child(self.paced_seconds, channel).inc(seconds)

    # ------------------------------------------------------------------ exposition
    async def render(self) -> bytes:
        """The text exposition format, with the sampled gauges read just now."""
        if self.sample is not None:
            try:
                await self.sample(self)
            except Exception:  # a scrape must still answer with the counters it has
                log.exception("metrics: sampling the gauges failed")
        return generate_latest(self.registry)

    async def handle(self, _request: web.Request) -> web.Response:
        """`GET /metrics`."""
        body = await self.render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def version_info(metrics: BridgeMetrics, instance: str) -> None:
    metrics.info.labels(__version__, instance).set(1)
