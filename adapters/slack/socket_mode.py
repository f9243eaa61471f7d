"""Socket Mode: the app opens a WebSocket to Slack and receives its events over it.

slack_sdk's client keeps the connection up by itself: it answers Slack's `disconnect`
(`refresh_requested`, `warning`) by asking `apps.connections.open` for a new URL and
reconnecting, and it reconnects when pings stop coming back. What it does not do is fail:
with a wrong app token its `connect()` retries forever. So the first URL is asked for here,
once, where a refusal becomes a clear `SlackStartError`, and the first connection must be up
within `connect_timeout`.

It also logs every failed reconnect attempt at error level, every `ping_interval`, for as
long as Slack is away. The core's `OutageTracker` turns that into one warning when the
connection is lost and one line when it is back. Whether the connection is down is read
from the client's own state (`connected()`: its current WebSocket is open and not stale),
never from the wording of its log lines; it is back once Slack sends anything over the new
socket (its `hello` comes first), seen through the client's `on_message_listeners`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.socket_mode.aiohttp import SocketModeClient

from adapters.slack.errors import CALL_ERRORS, SlackStartError, start_error
from bridge.core.outage import OutageTracker

log = logging.getLogger(__name__)


def connected(client: SocketModeClient) -> bool:
    """The client's own view (what its `is_connected()` reads, less the ping clock, which
    only its monitor consults): not closed, not marked stale, its WebSocket open."""
    session = client.current_session
    return not client.closed and not client.stale and session is not None and not session.closed


class QuietRetries(logging.Filter):
    """Filters one account's Socket Mode client logger: an error while the client is not
    connected is one of its reconnect attempts, counted by the tracker (which warns once)
    and sent to the debug log; any other line passes as it is."""

    def __init__(self, client: SocketModeClient, health: OutageTracker) -> None:
        super().__init__()
        self.client = client
        self.health = health

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR or connected(self.client):
            return True
        # The reason is for people only; cut at the URL, which holds a connection ticket.
        message = record.getMessage().split(" (url:")[0]
        self.health.down(message)
        log.debug("%s %s", self.health.who, message)
        return False


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
        self.health = OutageTracker(
            f"slack:{account}", lost="lost its Socket Mode connection",
            back="Socket Mode is connected again", retrying="retrying until Slack answers",
            logger=log,
        )
        client_log = logging.getLogger(self.logger_name(account))
        self._handler = AsyncSocketModeHandler(
            app, app_token, logger=client_log, ping_interval=ping_interval
        )
        client: SocketModeClient = self._handler.client
        for earlier in [f for f in client_log.filters if isinstance(f, QuietRetries)]:
            client_log.removeFilter(earlier)  # from this account's previous start
        client_log.addFilter(QuietRetries(client, self.health))
        client.on_message_listeners.append(self._heard)

    async def _heard(self, _: Any) -> None:
        """Slack sent something over the socket: the connection works."""
        self.health.up()

    @staticmethod
    def logger_name(account: str) -> str:
        """The logger slack_sdk's Socket Mode client writes to for this account."""
        return f"{__name__}.{account}"

    async def open(self) -> None:
        client = self._handler.client
        failure: SlackStartError | None = None
        try:
            client.wss_uri = await client.issue_new_wss_url()
        except CALL_ERRORS as exc:
            failure = start_error(exc, self.account, "apps.connections.open")
        if failure is None:
            try:
                async with asyncio.timeout(self.connect_timeout):
                    await self._handler.connect_async()
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
