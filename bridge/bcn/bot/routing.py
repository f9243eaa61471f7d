"""Building the `routing` field a final reply may carry, so nobody hand-writes it."""

from __future__ import annotations

from typing import Any, Literal


def route_to(
    *names: str,
    bot_uuids: tuple[str, ...] = (),
    mode: Literal["required", "optional"] = "required",
    reason: str | None = None,
    include_self: bool = False,
) -> dict[str, Any]:
    """Ask BCN to hand the next turn to these bots (by display name and/or bot_uuid)."""
    responders = [{"type": "name", "value": name} for name in names]
    responders += [{"type": "bot", "value": uuid} for uuid in bot_uuids]
    if not responders:
        raise ValueError("route_to needs at least one bot name or bot_uuid")
    if any(not selector["value"] for selector in responders):
        raise ValueError("bot names and uuids in route_to must be non-empty")
    routing: dict[str, Any] = {"responders": responders, "mode": mode,
                               "include_self": include_self}
    if reason:
        routing["reason"] = reason
    return routing
