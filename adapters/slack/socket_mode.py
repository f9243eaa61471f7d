"""Socket Mode: the app opens a WebSocket to Slack and receives its events over it.

slack_sdk's client keeps the connection up by itself: it answers Slack's `disconnect`
(`refresh_requested`, `warning`) by asking `apps.connections.open` for a new URL and
reconnecting, and it reconnects when pings stop coming back. What it does not do is fail:
with a wrong app token its `connect()` retries forever. So the first URL is asked for here,
once, where a refusal becomes a clear `SlackStartError`, and the first connection must be up
within `connect_timeout`. And it logs every failed reconnect attempt at error level, every
`ping_interval`, for as long as Slack is away: `SocketHealth` turns that into one warning when
the connection is lost and one line when it is back (the attempts go to the debug log).
"""

from __future__ import annotations

import asyncio
import logging

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp

from adapters.slack.errors import CALL_ERRORS, SlackStartError, start_error

log = logging.getLogger(__name__)


OUTAGE_LINES = (
    "Failed to retrieve WSS URL",
    "Failed to receive or enqueue a message",
    "Failed to check the current session",
    "Failed to connect",
    "Failed to send a ping",
)
"""How slack_sdk's Socket Mode client words a failed attempt to reach Slack."""


class SocketHealth(logging.Filter):
    """Filters one account's Socket Mode client logger: an outage is said once, not every
    few seconds, and so is its end."""

    def __init__(self, account: str) -> None:
        super().__init__()
        self.account = account
        self.failures = 0

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.levelno >= logging.ERROR and message.startswith(OUTAGE_LINES):
            self.failures += 1
            if self.failures == 1:
                log.warning(
                    "slack:%s lost its Socket Mode connection (%s); retrying until Slack "
                    "answers", self.account, message.split(" (url:")[0],
                )
            log.debug("slack:%s %s", self.account, message)
            return False
        if self.failures and "has been established" in message:
            log.info(
                "slack:%s Socket Mode is connected again after %d failed attempt(s)",
                self.account, self.failures,
            )
            self.failures = 0
        return True


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
        self.health = SocketHealth(account)
        client_log = logging.getLogger(self.logger_name(account))
        for earlier in [f for f in client_log.filters if isinstance(f, SocketHealth)]:
            client_log.removeFilter(earlier)  # from this account's previous start
        client_log.addFilter(self.health)
        self._handler = AsyncSocketModeHandler(
            app, app_token, logger=client_log, ping_interval=ping_interval
        )

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
