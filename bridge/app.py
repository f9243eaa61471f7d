"""From a `BridgeConfig` to a running bridge: hub (optional), store, web server, adapters,
relay — started in dependency order and stopped in reverse.

This is the only place that knows how the parts fit together; `bcn-bridge run`, the demo
and the end-to-end tests all go through it.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Any

from bridge.config.schema import BridgeConfig
from bridge.core import registry
from bridge.core.adapter import Adapter
from bridge.core.link import LinkSettings
from bridge.core.relay import Relay, utc_now
from bridge.dashboard.routes import Dashboard
from bridge.metrics import BridgeMetrics, version_info
from bridge.store import open_store
from bridge.store.base import Store
from bridge.web.server import WebServer
from bridge.web.status import BridgeStatus

log = logging.getLogger(__name__)


class BridgeApp:
    def __init__(
        self,
        config: BridgeConfig,
        *,
        clock: Callable[[], datetime] = utc_now,
        sweep_interval: float = 15.0,
        relay_options: dict[str, Any] | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.sweep_interval = sweep_interval
        self.relay_options = relay_options or {}
        self.hub: Any = None
        self.store: Store | None = None
        self.web: WebServer | None = None
        self.relay: Relay | None = None
        self.adapters: list[Adapter] = []
        self.metrics = BridgeMetrics()
        """This bridge's own registry (`GET /metrics` on the web server)."""
        self.status = BridgeStatus(self.metrics)
        self.dashboard: Dashboard | None = None

    @property
    def bcn_url(self) -> str:
        if self.config.bcn.embedded:
            assert self.hub is not None, "embedded BCN requested but no hub is running"
            return str(self.hub.url)
        return self.config.bcn.url

    async def start(self) -> None:
        config = self.config
        link_token = config.bcn.token
        if config.hub is not None:
            from bridge.hub.server import Hub

            hub_config = config.hub
            if config.bcn.embedded:
                # The in-process link needs a credential too; mint one nobody else knows.
                link_token = link_token or secrets.token_urlsafe(24)
                if link_token not in hub_config.link_tokens:
                    hub_config = hub_config.model_copy(
                        update={"link_tokens": [*hub_config.link_tokens, link_token]}
                    )
            self.hub = Hub(hub_config)
            await self.hub.start()
        self.store = await open_store(config.store)
        self.relay = Relay(
            store=self.store,
            bindings=list(config.bindings),
            link=LinkSettings(
                url=self.bcn_url,
                token=link_token or "",
                link_name=config.bcn.link_name,
                heartbeat_interval=config.bcn.heartbeat_interval,
                request_timeout=config.bcn.request_timeout,
                connect_timeout=config.bcn.connect_timeout,
                wait_for_link=config.bcn.wait_for_link,
                # The embedded hub is in this process: its link needs no socket.
                open_socket=self.hub.open_link if config.bcn.embedded else None,
            ),
            clock=self.clock,
            commands=config.commands,
            sweep_interval=self.sweep_interval,
            spool_limit=config.bcn.spool_limit,
            max_reply_chars=config.relay.max_reply_chars,
            metrics=self.metrics,
            **self.relay_options,
        )
        version_info(self.metrics, self.relay.instance)
        self.status.relay = self.relay
        if config.web.enabled:
            self.web = WebServer(config.web.listen, client_max_size=config.web.max_request_bytes)
            self.status.mount(self.web)
            if config.web.dashboard.enabled:
                self.dashboard = Dashboard(config.web.dashboard, self.status, self.metrics,
                                           self.clock)
                self.dashboard.mount(self.web)
        for channel_type, accounts in config.accounts.items():
            adapter_cls = registry.adapter_class(channel_type)
            for name, account_config in accounts.items():
                adapter = adapter_cls(name, account_config, self.relay.accept, web=self.web)
                adapter.use_bindings(
                    [b for b in config.bindings if b.channel == adapter.channel]
                )
                adapter.use_commands(config.commands)
                self.adapters.append(adapter)
                self.relay.add_adapter(adapter)
        if self.web is not None:
            await self.web.start()
        await self.relay.start()
        if self.dashboard is not None:
            await self.dashboard.start(self.relay)
        self._log_summary()

    def _log_summary(self) -> None:
        config = self.config
        where = f"embedded hub at {self.bcn_url}" if config.bcn.embedded else config.bcn.url
        log.info("bcn-bridge up — BCN: %s", where)
        for adapter in self.adapters:
            log.info("  account %s", adapter.channel)
        for binding in config.bindings:
            thread = f" thread {binding.thread}" if binding.thread else ""
            log.info("  binding %s chat %s%s → group %s", binding.channel, binding.chat,
                     thread, binding.group)
        if self.web is not None:
            log.info("  web server on %s", self.web.url)

    async def stop(self) -> None:
        """Stop everything that was started, in reverse; calling it twice is harmless."""
        relay, web, store, hub = self.relay, self.web, self.store, self.hub
        self.relay = self.web = self.store = self.hub = None
        self.status.relay = None
        dashboard, self.dashboard = self.dashboard, None
        if dashboard is not None:
            await dashboard.stop()
        if relay is not None:
            await relay.stop()
        if web is not None:
            await web.stop()
        if store is not None:
            await store.close()
        if hub is not None:
            await hub.stop()
