"""What the bridge's web server tells an orchestrator about it: `/readyz` and `/metrics`.

`/healthz` (in `bridge.web.server`) answers as long as the process serves HTTP: a liveness
probe. `/readyz` answers 200 only while this instance can relay — its BCN link is up and
every platform account says it is up — and 503 with a JSON body naming what is down
otherwise, so a load balancer or Kubernetes sends traffic elsewhere until it is back.
`/metrics` reads the same state into its gauges at every scrape.

`/readyz?scope=serving` asks less: whether this instance can take traffic at all (its relay
runs: the webchat, webhooks and the API answer). Kubernetes uses it as the readiness probe of
replicas that share one hub, since a hub restart takes every link down at once: with the full
`/readyz` every replica would turn NotReady together and a PodDisruptionBudget would block node
drains. The link and the accounts are watched through `bcn_bridge_link_up` and
`bcn_bridge_adapter_up` instead (docs/operations.md, alerts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from bridge import __version__
from bridge.metrics import BridgeMetrics

if TYPE_CHECKING:
    from bridge.core.relay import Relay
    from bridge.web.server import WebServer


class BridgeStatus:
    """Readiness and sampled gauges of one bridge; `relay` is None before start and after stop."""

    def __init__(self, metrics: BridgeMetrics) -> None:
        self.metrics = metrics
        self.relay: Relay | None = None
        metrics.sample = self.sample

    def mount(self, web_server: WebServer) -> None:
        web_server.router.add_get("/readyz", self.readyz)
        web_server.router.add_get("/metrics", self.metrics.handle)

    def down(self) -> dict[str, str]:
        """What keeps this instance from relaying: part → why; empty when ready."""
        relay = self.relay
        if relay is None:
            return {"bridge": "not running (starting or stopping)"}
        problems: dict[str, str] = {}
        if not relay.link.connected:
            problems["bcn"] = f"the BCN link to {relay.link.settings.url} is not connected"
        for adapter in relay.ctx.adapters.values():
            why = adapter.health()
            if why is not None:
                problems[adapter.channel] = why
        return problems

    def not_serving(self) -> dict[str, str]:
        """What keeps this instance from taking traffic (`/readyz?scope=serving`)."""
        if self.relay is None:
            return {"bridge": "not running (starting or stopping)"}
        return {}

    async def readyz(self, request: web.Request) -> web.Response:
        scope = request.query.get("scope", "relay")
        if scope not in ("relay", "serving"):
            return web.json_response(
                {"error": f"scope must be relay (the default) or serving, not {scope!r}"},
                status=400)
        down = self.not_serving() if scope == "serving" else self.down()
        body: dict[str, Any] = {"status": "ready" if not down else "not ready",
                                "version": __version__}
        if down:
            body["down"] = down
        return web.json_response(body, status=503 if down else 200)

    async def sample(self, metrics: BridgeMetrics) -> None:
        """Read the link, the adapters and the store into the gauges (before a scrape)."""
        relay = self.relay
        metrics.link_up.set(1 if relay is not None and relay.link.connected else 0)
        if relay is None:
            return
        for adapter in relay.ctx.adapters.values():
            metrics.adapter_up.labels(adapter.channel).set(0 if adapter.health() else 1)
        store = relay.ctx.store
        metrics.outbox_depth.set(await store.outbox.count())
        metrics.spool_depth.set(await store.spool.count())
        counts = await store.conversations.counts()
        metrics.conversations_open.set(counts.get("open", 0) + counts.get("clarifying", 0))
