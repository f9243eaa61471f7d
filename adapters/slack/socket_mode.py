"""Socket Mode: the app opens a WebSocket to Slack and receives its events over it.

slack_sdk's client keeps the connection up by itself: it answers Slack's `disconnect`
(`refresh_requested`, `warning`) by asking `apps.connections.open` for a new URL and
reconnecting, and it reconnects when pings stop coming back. What it does not do is fail:
with a wrong app token its `connect()` retries forever. So the first URL is asked for here,
once, where a refusal becomes a clear `SlackStartError`, and the first connection must be up
within `connect_timeout`.
"""

from __future__ import annotations

import asyncio
import logging

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp

from adapters.slack.errors import CALL_ERRORS, SlackStartError, start_error

log = logging.getLogger(__name__)


class SocketConnection:
    """One Socket Mode connection of one account, opened by `open()`, closed by `close()`."""

    def __init__(
        self,
        app: AsyncApp,
        app_token: str,
        *,
        account: str,
        ping_interval: float,
        connect_timeout: float,
    ) -> None:
        self.account = account
        self.connect_timeout = connect_timeout
        self._handler = AsyncSocketModeHandler(app, app_token, ping_interval=ping_interval)

    async def open(self) -> None:
        client = self._handler.client
        failure: SlackStartError | None = None
        try:
            client.wss_uri = await client.issue_new_wss_url()
        except CALL_ERRORS as exc:
            failure = start_error(exc, self.account, "apps.connections.open")
        if failure is None:
            try:
                await asyncio.wait_for(self._handler.connect_async(), self.connect_timeout)
            except TimeoutError:
                failure = SlackStartError(
                    f"slack:{self.account}: the Socket Mode WebSocket did not open within "
                    f"{self.connect_timeout:g}s"
                )
        if failure is not None:
            await self.close()
            raise failure
        log.info("slack:%s receives events over Socket Mode", self.account)

    async def close(self) -> None:
        await self._handler.close_async()
