"""Reading what a bot → hub request names: strings, and the group/session it acts in.

Shared by `bot_requests.py` and `tasks.py`. The group/session rules are the BCN server's:
a `group_id` may carry its session (`{group}:{session}`), a separate `session_id` wins,
an unknown group is `group_not_found`, an unknown session `session_not_found`, a session
of another group `invalid_session`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bridge.bcn.errors import BcnError, ErrorCode
from bridge.hub.groups import Group
from bridge.hub.sessions import ChannelSession
from bridge.hub.state import BotLink, HubState


def invalid(method: str, message: str) -> BcnError:
    return BcnError(ErrorCode.INVALID_REQUEST, f"{method}: {message}")


def required_text(params: dict[str, Any], key: str, method: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value.strip():
        raise invalid(method, f"'{key}' must be a non-empty string")
    return value.strip()


def optional_text(params: dict[str, Any], key: str, method: str) -> str | None:
    value = params.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid(method, f"'{key}' must be a string")
    return value


def split_scope(group_id: str, session_id: str | None) -> tuple[str, str | None]:
    """(group, session) from a wire `group_id` that may be session-shaped."""
    if session_id is not None:
        if ":" in session_id:
            return session_id.split(":", 1)[0], session_id
        if ":" in group_id and group_id.split(":", 1)[0] == session_id:
            return session_id, group_id  # old clients: group in session_id, session in group_id
        return group_id, session_id
    if ":" in group_id:
        return group_id.split(":", 1)[0], group_id
    return group_id, None


@dataclass(frozen=True, slots=True)
class Scope:
    group: Group
    session: ChannelSession | None
    thread_id: str | None = None


def find_scope(state: HubState, group_id: str, session_id: str | None) -> Scope:
    """The group (and session, when one is named) a request refers to."""
    group_key, session_key = split_scope(group_id, session_id)
    group = state.groups.get(group_key)
    if group is None:
        raise BcnError(ErrorCode.GROUP_NOT_FOUND, f"Group not found: {group_key}")
    if session_key is None:
        return Scope(group, None)
    session = state.sessions.get(session_key)
    if session is None:
        raise BcnError(ErrorCode.SESSION_NOT_FOUND, f"Session not found: {session_key}")
    if session.group_id != group.id:
        raise BcnError(ErrorCode.INVALID_SESSION,
                       f"Session {session_key} does not belong to group {group.id}")
    return Scope(group, session)


def member_scope(state: HubState, bot: BotLink, params: dict[str, Any], method: str) -> Scope:
    """The group a member bot acts in (and the session, when `group_id` names one)."""
    scope = find_scope(state, required_text(params, "group_id", method), None)
    if bot.record.bot_uuid not in scope.group.members:
        raise BcnError(ErrorCode.UNAUTHORIZED,
                       f"{bot.record.name} is not a member of group {scope.group.id}")
    return scope


def with_session(state: HubState, bot: BotLink, scope: Scope, method: str) -> Scope:
    """The scope with its session: the named one, else that of the bot's latest run."""
    if scope.session is not None:
        return scope
    run = state.runs.latest_of(bot.record.bot_uuid, scope.group.id)
    if run is None:
        raise invalid(method, "no session to act in: call it while answering a message, or "
                              "name the session as group_id '{group}:{session}'")
    return Scope(scope.group, run.session, run.thread_id)
