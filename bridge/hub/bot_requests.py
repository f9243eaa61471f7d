"""Requests a connected bot sends the hub, answered as the BCN server answers them.

- `bot.status` {`status` idle/busy/error, `dynamic_summary`, `load`} → `{updated: true}`;
- `route.resolve` {`group_id`, `session_id`?, `selectors` [{type name/bot, value}]} →
  `{ok: true, resolved: [{type: bot, value, bot_name, role}]}`, or
  `{ok: false, error, message, candidates}` when a selector matches nobody;
- `session.complete` {`session_id`, `output`?, `error`?} → the session
  `{session_id, group_id, status, output, error}`, or `{already_completed: true}`;
- `task.dispatch` / `task.message` / `task.complete` → see `tasks.py`.

Malformed params are `invalid_request` naming the field; the server's own codes
(`group_not_found`, `session_not_found`, `invalid_session`, …) say what was not found.
"""

from __future__ import annotations

import logging
from typing import Any

from bridge.bcn.errors import BcnError, ErrorCode
from bridge.bcn.frames import Request
from bridge.bcn.run_events import now_ms
from bridge.hub.bot_scope import find_scope, invalid, optional_text, required_text
from bridge.hub.dispatch import Dispatcher
from bridge.hub.routing import RoledParticipant, resolve_selectors
from bridge.hub.sessions import ChannelSession
from bridge.hub.state import BotLink, HubState
from bridge.hub.tasks import TaskBoard

log = logging.getLogger(__name__)

BOT_STATUSES = ("idle", "busy", "error")


class BotRequests:
    def __init__(self, state: HubState, dispatcher: Dispatcher) -> None:
        self.state = state
        self.dispatcher = dispatcher
        self.tasks = TaskBoard(state, dispatcher)

    async def handle(self, bot: BotLink, req: Request) -> dict[str, Any]:
        params = req.params
        match req.method:
            case "bot.status":
                return self._status(bot, params)
            case "route.resolve":
                return self._route_resolve(params)
            case "session.complete":
                return self._session_complete(bot, params)
            case "task.dispatch":
                return await self.tasks.dispatch(bot, params)
            case "task.message":
                return await self.tasks.message(bot, params)
            case "task.complete":
                return self.tasks.complete(bot, params)
            case "bot.connect":
                raise BcnError(ErrorCode.INVALID_REQUEST, "already connected")
        raise BcnError(ErrorCode.UNKNOWN_METHOD, f"Unknown method: {req.method}")

    @staticmethod
    def _status(bot: BotLink, params: dict[str, Any]) -> dict[str, Any]:
        """A heartbeat; what the bot says of itself is kept for `channel.participants`."""
        status = params.get("status", "idle")
        if status not in BOT_STATUSES:
            raise invalid("bot.status", f"'status' must be one of {', '.join(BOT_STATUSES)}")
        summary = optional_text(params, "dynamic_summary", "bot.status")
        load = params.get("load")
        if load is not None and (isinstance(load, bool) or not isinstance(load, int | float)):
            raise invalid("bot.status", "'load' must be a number")
        bot.status = {"status": status, "dynamic_summary": summary, "load": load,
                      "updated_at": now_ms()}
        return {"updated": True}

    def _route_resolve(self, params: dict[str, Any]) -> dict[str, Any]:
        scope = find_scope(self.state, required_text(params, "group_id", "route.resolve"),
                           optional_text(params, "session_id", "route.resolve"))
        selectors = params.get("selectors")
        if not isinstance(selectors, list):
            raise invalid("route.resolve", "'selectors' must be an array")
        role_of = self.state.groups.role_of
        participants = [RoledParticipant(p.bot_uuid, p.name, role_of(scope.group, p.bot_uuid))
                        for p in self.state.participants(scope.group)]
        return resolve_selectors(participants, selectors)

    def _session_complete(self, bot: BotLink, params: dict[str, Any]) -> dict[str, Any]:
        session_id = required_text(params, "session_id", "session.complete")
        session = self.state.sessions.get(session_id)
        if session is None:
            raise BcnError(ErrorCode.SESSION_NOT_FOUND, f"Session not found: {session_id}")
        group = self.state.groups.get(session.group_id)
        if group is None or bot.record.bot_uuid not in group.members:
            raise BcnError(ErrorCode.UNAUTHORIZED,
                           f"{bot.record.name} is not a member of session {session_id}")
        error = optional_text(params, "error", "session.complete")
        output = params.get("output")
        if not self.state.sessions.complete(session, output, error):
            return {"already_completed": True}
        detail = error or (output if isinstance(output, str) else "")
        self.dispatcher.system_output(
            session, f"{bot.record.name} completed this session"
            + (f": {detail}" if detail else ".") + " The next message starts a new one.")
        return session_view(session)


def session_view(session: ChannelSession) -> dict[str, Any]:
    return {"session_id": session.id, "group_id": session.group_id, "status": session.status,
            "output": session.output, "error": session.error}
