"""`/ws/bot` protocol versions and the capabilities a `bot.connect` negotiates.

Facts from the BCN server (its bot WebSocket dispatcher and protocol contract), shared by
the hub (which answers `bot.connect`) and the bot SDK (which reads the answer):

- versions 1–3 exist; a `bot.connect` that names none gets **2**, the server's
  compatibility default — v3 must be asked for explicitly;
- the answer always carries `capabilities`; `unified_run_events` and
  `canonical_session_id` are true exactly when v3 was negotiated (run events are then
  `chat` / `agent` with `runId`, `sessionId`, `seq`, `ts`, and `session_key` is the
  canonical session id); `tool_result_task_intent` is true only for v3 connections whose
  `client_kind` is an MCP coordination profile the deployment allows.
"""

from __future__ import annotations

from typing import Any

CURRENT_PROTOCOL_VERSION = 3
"""Newest `/ws/bot` version."""

DEFAULT_PROTOCOL_VERSION = 2
"""What a `bot.connect` without `protocol_version` negotiates (the server's default)."""

RUN_EVENTS_VERSION = 3
"""From this version on, run events are the unified `chat` / `agent` events."""


def capabilities(version: int, *, task_intent: bool = False) -> dict[str, bool]:
    """The `capabilities` object of a `bot.connect` answer for a negotiated version."""
    unified = version >= RUN_EVENTS_VERSION
    return {
        "unified_run_events": unified,
        "canonical_session_id": unified,
        "tool_result_task_intent": unified and task_intent,
    }


def speaks_run_events(version: int, negotiated: Any) -> bool:
    """Whether a connection sends v3 run events: v3 *and* the capability said so.

    A BCN that answers version 3 without `capabilities` predates unified run events (it
    only used canonical session keys), so such a connection keeps the `chat.event` form.
    """
    return (
        version >= RUN_EVENTS_VERSION
        and isinstance(negotiated, dict)
        and negotiated.get("unified_run_events") is True
    )
