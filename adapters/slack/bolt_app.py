"""The account's Bolt app: ack everything at once, hand it on, process it later.

Slack redelivers an event it has not seen acked within 3 s, and a slash command that is not
acked in 3 s fails in front of the person who typed it. So the listeners here do nothing but
ack (Bolt acks events itself before the listener runs; commands ack first thing) and hand
the payload to the adapter's queue, where one worker relays them in the order they came.

The app gets the adapter's own `AsyncWebClient` (`client=`), so Bolt's lazy `auth.test`, the
Socket Mode client's `apps.connections.open` and every Web API call go to the configured
`api_base_url`. Request verification is off in Bolt because the HTTP route verifies every
request itself (see `events_route`); Socket Mode requests need none.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, Literal

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_sdk.web.async_client import AsyncWebClient

PayloadKind = Literal["event", "command"]
Receiver = Callable[[PayloadKind, dict[str, Any]], None]
"""Takes an acked payload (`event_callback` body or slash command); must not block."""

ANY = re.compile(r".*")


class _EnvTokenNotice(logging.Filter):
    """Drops Bolt's warning that `SLACK_BOT_TOKEN` in the environment is unused.

    Bolt reads that variable even when given a client, and the docs suggest exporting it for
    `bot_token: ${SLACK_BOT_TOKEN}`, so the warning would greet every start and mean nothing.
    """

    message = warning_client_prioritized_and_token_skipped()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != self.message


_ENV_TOKEN_NOTICE = _EnvTokenNotice()


def build_app(client: AsyncWebClient, *, name: str, receive: Receiver) -> AsyncApp:
    """A Bolt app whose only listeners ack and pass payloads to `receive`."""
    framework = logging.getLogger("slack_bolt.AsyncApp")
    if _ENV_TOKEN_NOTICE not in framework.filters:
        framework.addFilter(_ENV_TOKEN_NOTICE)
    app = AsyncApp(
        client=client,
        name=name,
        signing_secret="",
        request_verification_enabled=False,
        process_before_response=False,
    )

    async def on_event(body: dict[str, Any]) -> None:
        receive("event", body)

    async def on_command(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        receive("command", body)

    app.event(ANY)(on_event)
    app.command(ANY)(on_command)
    return app
