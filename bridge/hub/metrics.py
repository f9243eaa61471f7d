"""The hub's Prometheus metrics (`GET /metrics` beside `/healthz`), all named `bcn_hub_*`.

Everything is read from the hub's state when scraped, so the hub's code counts nothing
itself beyond the run totals its run table keeps. Each hub has its own registry: a bridge
with an embedded hub, or a test with several hubs, never mixes their numbers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from bridge import __version__

if TYPE_CHECKING:
    from bridge.hub.state import HubState


class HubCollector(Collector):
    """Reads one hub's state into metric families at each scrape."""

    def __init__(self, state: HubState) -> None:
        self.state = state

    def collect(self) -> Iterator[Metric]:
        state = self.state
        yield _gauge("bcn_hub_bots_online", "Bots connected to /ws/bot now.", len(state.presence))
        yield _gauge("bcn_hub_bots_registered", "Bots the hub knows (registered or provisioned).",
                     len(state.registry))
        yield _gauge("bcn_hub_links", "Channel links (bridges) connected to /ws/channel now.",
                     len(state.links))
        yield _gauge("bcn_hub_groups", "Groups configured.", len(state.groups))
        yield _gauge("bcn_hub_sessions", "Channel sessions known.", len(state.sessions))
        yield _gauge("bcn_hub_deliveries_pending",
                     "Deliveries to channel links not acked yet (over every binding).",
                     state.outboxes.pending_total())
        yield _gauge("bcn_hub_runs_running", "Bot runs (replies) in progress.",
                     state.runs.running_count)
        started = CounterMetricFamily("bcn_hub_runs_started", "Bot runs started.")
        started.add_metric([], state.runs.started)
        yield started
        ended = CounterMetricFamily("bcn_hub_runs_ended", "Bot runs ended, by how they ended.",
                                    labels=["state"])
        for run_state, count in sorted(state.runs.ended.items()):
            ended.add_metric([run_state], count)
        yield ended
        yield from state.backpressure.collect(state.presence)
        info = GaugeMetricFamily("bcn_hub_info", "Always 1; the label says the version.",
                                 labels=["version"])
        info.add_metric([__version__], 1)
        yield info


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


class HubMetrics:
    """The registry of one hub and its `/metrics` handler."""

    def __init__(self, state: HubState) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(HubCollector(state))

    async def handle(self, _request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(self.registry),
                            headers={"Content-Type": CONTENT_TYPE_LATEST})
