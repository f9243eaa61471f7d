"""The account's Bolt app: hand every payload to the adapter's queue, ack it once relayed.

Slack redelivers an event it has not seen acked within 3 s, and a slash command that is not
acked in 3 s fails in front of the person who typed it. The listeners hand each payload to
the adapter's queue, where one worker relays them in the order they came; an event is acked
when the worker has relayed it (at most `ACK_BUDGET` later), so a bridge killed before
that gets it redelivered instead of losing it; a command is acked first thing, and so is a
press on a card's button (`bcn_card_*`, handled after the ack: the answer comes as an
ephemeral message). The own-words modal's submission is acked with what it settled, so a
refusal shows under its input (see the adapter's `_submitted` for its time budget).

The app gets the adapter's own `AsyncWebClient` (`client=`), so the Socket Mode client's
`apps.connections.open` and every Web API call go to the configured `api_base_url`. Bolt is
told who the app is (`authorize=`) from the adapter's own `auth.test` at start: left to
itself it would call `auth.test` again when the first events arrive, and a burst of them
would each wait for that call and reach the queue in whatever order the answers came. Bolt's
self-filter works from the same answer. Request verification is off in Bolt because the
HTTP route verifies every request itself (see `events_route`); Socket Mode requests need none.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.error import BoltUnhandledRequestError
from slack_bolt.logger.messages import (
    warning_client_prioritized_and_token_skipped,
    warning_token_skipped,
)
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.cards import ACTION_PREFIX, OWN_WORDS_CALLBACK
from adapters.slack.startup import Identity
from bridge.web.refusals import RefusalLog

log = logging.getLogger(__name__)

PayloadKind = Literal["event", "command"]
Receiver = Callable[[PayloadKind, dict[str, Any]], "asyncio.Future[None]"]
"""Queues a payload (`event_callback` body or slash command) for the adapter's worker, at
once; the future is done once the worker relayed it."""
Pressed = Callable[[dict[str, Any]], None]
"""Takes a press on a card's button (a `block_actions` body) to handle after the ack."""
Submitted = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]
"""Handles an own-words modal's submission; what to ack it with (`response_action`
errors), or None to close the modal."""

ACK_BUDGET = 2.0
"""Seconds an event's ack waits for its relay. Slack redelivers what it does not see acked
within 3 s: acking only once the event is relayed means a bridge killed in between gets it
again (and the store's dedupe drops what was relayed already); past the budget the event
is acked anyway and relayed from memory, rather than drawing a redelivery storm."""

ANY = re.compile(r".*")
CARD_ACTION = re.compile(rf"^{ACTION_PREFIX}")


class _ExpectedNotices(logging.Filter):
    """Drops two Bolt warnings about choices made here on purpose.

    Bolt warns that the client's token wins over `SLACK_BOT_TOKEN` from the environment
    (which the docs suggest exporting for `bot_token: ${SLACK_BOT_TOKEN}`), and that with
    `authorize=` it takes tokens from the authorize result: both would greet every start and
    mean nothing.
    """

    messages = frozenset({warning_client_prioritized_and_token_skipped(), warning_token_skipped()})

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() not in self.messages


_EXPECTED_NOTICES = _ExpectedNotices()


def build_app(
    client: AsyncWebClient, *, name: str, identity: Identity, receive: Receiver,
    pressed: Pressed | None = None, submitted: Submitted | None = None,
) -> AsyncApp:
    """A Bolt app whose only listeners ack and pass payloads to `receive` (events and
    commands), `pressed` (card buttons) and `submitted` (the own-words modal)."""
    framework = logging.getLogger("slack_bolt.AsyncApp")
    if _EXPECTED_NOTICES not in framework.filters:
        framework.addFilter(_EXPECTED_NOTICES)
    known = AuthorizeResult(
        enterprise_id=None,
        team_id=identity.team_id,
        team=identity.team,
        bot_user_id=identity.user_id,
        bot_id=identity.bot_id,
        bot_token=client.token,
        bot_scopes=sorted(identity.scopes),
    )

    async def authorize() -> AuthorizeResult:
        return known

    app = AsyncApp(
        client=client,
        name=name,
        authorize=authorize,
        signing_secret="",
        request_verification_enabled=False,
        process_before_response=True,  # events are acked once relayed (see ACK_BUDGET)
        raise_error_for_unhandled_request=True,  # to `_unreadable_payload`: logged once
    )

    async def on_event(body: dict[str, Any]) -> None:
        await asyncio.wait({receive("event", body)}, timeout=ACK_BUDGET)

    async def on_command(ack: AsyncAck, body: dict[str, Any]) -> None:
        # Answered at once, not once relayed (Bolt sends the ack when this returns): the
        # person who typed it sees an error after 3 s otherwise.
        await ack()
        receive("command", body)

    async def on_press(ack: AsyncAck, body: dict[str, Any]) -> None:
        # Acked first (Slack shows the person an error after 3 s); the tap is settled after,
        # and its answer comes as an ephemeral message. Bolt sends the ack on return.
        await ack()
        if pressed is not None:
            pressed(body)

    async def on_submit(ack: AsyncAck, body: dict[str, Any]) -> None:
        answer = await submitted(body) if submitted is not None else None
        await ack(**(answer or {}))

    app.event(ANY)(on_event)
    app.command(ANY)(on_command)
    app.block_action(CARD_ACTION)(on_press)
    app.view_submission(OWN_WORDS_CALLBACK)(on_submit)
    app.error(_unreadable_payload(RefusalLog(log, f"{name} (Bolt)")))
    return app


BOLT_READ_ERRORS = (KeyError, TypeError, AttributeError, IndexError, ValueError)
"""What slack-bolt raises while it reads a signed payload of a shape it does not expect
(`req.body.get(...)` on a list, `payload["actions"][0]` on an empty one). Inside Bolt they
are the payload's fault; in our own code the same exceptions are bugs, and stay 500s."""


def _unreadable_payload(refusals: RefusalLog) -> Callable[..., Any]:
    """Bolt's error handler: a payload Bolt's own middleware cannot read is 400.

    Bolt reads fields of every payload (`authorizations`, `team`, `event`…) assuming their
    types, and answers 500 with a logged traceback when a signed payload has others. The
    listeners here only queue the payload (the relay's failures never reach Bolt), so an
    exception of a parser's kinds in Bolt is the payload's fault: 400 and one throttled
    line. Any other failure keeps Bolt's 500 and its traceback. A payload of a type no
    listener takes stays Bolt's 404, with a throttled line instead of a warning each time.
    """

    async def handle(error: Exception, request: AsyncBoltRequest,
                     response: BoltResponse | None) -> BoltResponse | None:
        if isinstance(error, BoltUnhandledRequestError):  # a payload no listener takes: 404
            refusals.refused("Slack", f"a {request.body.get('type')!r} payload no listener "
                             "takes", 404)
            return None
        if (isinstance(error, BOLT_READ_ERRORS) and response is not None
                and response.status >= 500):
            problem = f"a payload Bolt cannot read ({type(error).__name__}: {error})"
            refusals.refused("Slack (a signed request)", problem, 400)
            return BoltResponse(status=400, body={"error": "invalid payload"})
        log.error("Bolt failed on a request: %s", error, exc_info=error)
        return None

    return handle

