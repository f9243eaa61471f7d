"""Tasks in `manager_worker` groups: the BCN server's `task.*` requests.

The group's driver is its manager, the other members its workers.

- `task.dispatch` {`group_id`, `target_bot`, `message`, `response_mode`?} — manager only
  (`not_driver`); the target is a worker by uuid or name (`target_not_found`) that is
  online (`bot_not_connected`). The worker gets `chat.send` with the task; its final goes
  back to the manager. Answer `{task_id, status: "dispatched"}`.
- `task.message` {`group_id`, `message`} — a worker tells its manager something
  (progress, a blocker). Answer `{status: "sent"}`.
- `task.complete` {`group_id`, `summary`, `status`? (completed)} — manager only; the task
  group's work is done: the summary is posted and the session completes, so the chat's
  next message opens a new one. Answer `{ok: true}`.

A default group answers `unsupported_service_mode`. `group_id` may name the session
(`{group}:{session}`); otherwise the caller's latest run in the group says which session
it acts in. Humans see every step as a notice in the chat.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from bridge.bcn.errors import BcnError, ErrorCode
from bridge.hub.bot_scope import (
    Scope,
    invalid,
    member_scope,
    optional_text,
    required_text,
    with_session,
)
from bridge.hub.dispatch import Dispatcher
from bridge.hub.state import BotLink, HubState

log = logging.getLogger(__name__)

RESPONSE_MODES = ("after-last-tool-call", "full")
COMPLETE_STATUSES = ("completed", "failed", "cancelled")


class TaskBoard:
    def __init__(self, state: HubState, dispatcher: Dispatcher) -> None:
        self.state = state
        self.dispatcher = dispatcher

    def _task_scope(
        self, bot: BotLink, params: dict[str, Any], method: str, *, manager: bool
    ) -> Scope:
        """Group, role and session checks, in that order, so errors name the real problem."""
        scope = member_scope(self.state, bot, params, method)
        if not scope.group.manager_worker:
            raise BcnError(ErrorCode.UNSUPPORTED_SERVICE_MODE,
                           f"{method} needs a manager_worker group; {scope.group.id} is not one")
        is_manager = self.state.groups.driver_uuid(scope.group) == bot.record.bot_uuid
        if manager and not is_manager:
            raise BcnError(ErrorCode.NOT_DRIVER,
                           f"{method}: only the manager of {scope.group.id} (its driver bot) "
                           "may do this")
        if not manager and is_manager:
            raise BcnError(ErrorCode.UNAUTHORIZED,
                           "task.message is for workers; the manager uses task.dispatch")
        return with_session(self.state, bot, scope, method)

    async def dispatch(self, bot: BotLink, params: dict[str, Any]) -> dict[str, Any]:
        scope = self._task_scope(bot, params, "task.dispatch", manager=True)
        target = required_text(params, "target_bot", "task.dispatch")
        message = required_text(params, "message", "task.dispatch")
        mode = optional_text(params, "response_mode", "task.dispatch")
        if mode is not None and mode not in RESPONSE_MODES:
            raise invalid("task.dispatch", f"'response_mode' must be one of "
                                           f"{', '.join(RESPONSE_MODES)}")
        worker = next((p for p in self.state.participants(scope.group)
                       if p.bot_uuid != bot.record.bot_uuid
                       and (p.bot_uuid == target or p.name.casefold() == target.casefold())),
                      None)
        if worker is None:
            raise BcnError(ErrorCode.TARGET_NOT_FOUND,
                           f"Target bot not found in group: {target}")
        if not worker.online:
            raise BcnError(ErrorCode.BOT_NOT_CONNECTED,
                           f"target bot is not connected: {worker.name}")
        assert scope.session is not None
        task_id = f"task-{uuid.uuid4().hex}"
        self.dispatcher.system_output(scope.session, f"{bot.record.name} → {worker.name} "
                                      f"(task): {message}", scope.thread_id)
        await self.dispatcher.deliver_from_bot(bot, scope.session, message, worker.bot_uuid,
                                               reason=f"task {task_id}",
                                               thread_id=scope.thread_id, task_id=task_id)
        log.info("session %s: task %s for %s", scope.session.id, task_id, worker.name)
        return {"task_id": task_id, "status": "dispatched"}

    async def message(self, bot: BotLink, params: dict[str, Any]) -> dict[str, Any]:
        scope = self._task_scope(bot, params, "task.message", manager=False)
        manager = self.state.groups.driver_uuid(scope.group)
        message = required_text(params, "message", "task.message")
        if manager is None or not self.state.presence.online(manager):
            raise BcnError(ErrorCode.BOT_NOT_CONNECTED, "the manager bot is not connected")
        assert scope.session is not None
        record = self.state.registry.by_uuid(manager)
        self.dispatcher.system_output(scope.session, f"{bot.record.name} → "
                                      f"{record.name if record else manager}: {message}",
                                      scope.thread_id)
        await self.dispatcher.deliver_from_bot(bot, scope.session, message, manager,
                                               reason="task message", thread_id=scope.thread_id)
        return {"status": "sent"}

    def complete(self, bot: BotLink, params: dict[str, Any]) -> dict[str, Any]:
        scope = self._task_scope(bot, params, "task.complete", manager=True)
        summary = required_text(params, "summary", "task.complete")
        status = params.get("status", "completed")
        if status not in COMPLETE_STATUSES:
            raise BcnError(ErrorCode.INVALID_STATUS,
                           f"invalid task complete status {status!r}; "
                           f"use one of {', '.join(COMPLETE_STATUSES)}")
        assert scope.session is not None
        self.dispatcher.system_output(
            scope.session, f"{bot.record.name} finished the task ({status}): {summary}",
            scope.thread_id)
        self.state.sessions.complete(scope.session, summary,
                                     None if status == "completed" else status)
        return {"ok": True}
