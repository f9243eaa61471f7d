"""Keep Slack tokens out of every log line, with the bridge's one secret redactor.

slack_sdk sends tokens in the `Authorization` header (which it redacts in its own debug
lines), but at debug level it logs every response body, and `apps.connections.open` answers
with the Socket Mode URL whose `ticket` lets anyone open a connection for the app. The
configured tokens and signing secret are registered with `bridge.logs.REDACTOR`, so are the
shapes of Slack tokens and tickets, and the Slack loggers are filtered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from bridge.logs import REDACTOR, protect_loggers

SLACK_TOKEN = re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{8,}|\bxapp-\d-[A-Za-z0-9-]{8,}")
"""Bot, user, refresh and app-level token shapes."""

SOCKET_TICKET = re.compile(r"(?<=ticket=)[^&\s'\"]+")
"""The one-time credential inside a Socket Mode WebSocket URL."""

HOOK_URL = re.compile(r"(?<=hooks\.slack\.com/)[A-Za-z]+/[^\s'\"\\]+")
"""A slash command's `response_url` (or an incoming webhook): whoever has it may post."""

_LOGGERS = ("slack_bolt", "slack_sdk", "aiohttp")


def protect_tokens(*secrets: str | None, loggers: Iterable[str] = ()) -> None:
    """Register an account's secrets and filter every logger that can see them.

    A logger's filter only covers that very logger, and Bolt creates some of its loggers
    lazily, so call this again once the app exists; `loggers` adds the Bolt app's own.
    """
    REDACTOR.add(secrets)
    REDACTOR.add_pattern(SLACK_TOKEN)
    REDACTOR.add_pattern(SOCKET_TICKET)
    REDACTOR.add_pattern(HOOK_URL)
    protect_loggers((*_LOGGERS, *loggers))
