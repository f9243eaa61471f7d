"""Bot → BCN requests beyond answering: structured routing and manager-worker tasks.

Thin, typed wrappers over `Bot.request` for the methods the BCN server serves, so a bot
author does not hand-write their params (see docs/bots.md for what each answers):

- `resolve_route` — `route.resolve`: names or uuids → the group's canonical bot selectors,
  to put in a final's `routing` (an unknown name answers `ok: false` with candidates);
- `dispatch_task` / `send_task_message` / `complete_task` — `task.*` in a
  `manager_worker` group (manager hands out work, workers report, manager closes);
- `complete_session` — `session.complete`: the session is done.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from bridge.bcn.bot.client import Bot


async def resolve_route(
    bot: Bot,
    group_id: str,
    *,
    names: Iterable[str] = (),
    bot_uuids: Iterable[str] = (),
    session_id: str | None = None,
) -> dict[str, Any]:
    """`route.resolve`; the answer's `resolved` list is ready for a `routing` field."""
    selectors = [{"type": "name", "value": name} for name in names]
    selectors += [{"type": "bot", "value": uuid} for uuid in bot_uuids]
    params: dict[str, Any] = {"group_id": group_id, "selectors": selectors}
    if session_id is not None:
        params["session_id"] = session_id
    return await bot.request("route.resolve", params)


async def dispatch_task(
    bot: Bot,
    group_id: str,
    target_bot: str,
    message: str,
    *,
    response_mode: Literal["after-last-tool-call", "full"] | None = None,
) -> dict[str, Any]:
    """`task.dispatch` (manager only): answers `{task_id, status: "dispatched"}`."""
    params: dict[str, Any] = {"group_id": group_id, "target_bot": target_bot,
                              "message": message}
    if response_mode is not None:
        params["response_mode"] = response_mode
    return await bot.request("task.dispatch", params)


async def send_task_message(bot: Bot, group_id: str, message: str) -> dict[str, Any]:
    """`task.message` (worker → manager): answers `{status: "sent"}`."""
    return await bot.request("task.message", {"group_id": group_id, "message": message})


async def complete_task(
    bot: Bot, group_id: str, summary: str, *, status: str | None = None
) -> dict[str, Any]:
    """`task.complete` (manager only): answers `{ok: true}`."""
    params: dict[str, Any] = {"group_id": group_id, "summary": summary}
    if status is not None:
        params["status"] = status
    return await bot.request("task.complete", params)


async def complete_session(
    bot: Bot, session_id: str, *, output: Any = None, error: str | None = None
) -> dict[str, Any]:
    """`session.complete`: the session, or `{already_completed: true}`."""
    params: dict[str, Any] = {"session_id": session_id}
    if output is not None:
        params["output"] = output
    if error is not None:
        params["error"] = error
    return await bot.request("session.complete", params)
