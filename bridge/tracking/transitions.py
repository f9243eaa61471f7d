"""The conversation state machine as pure functions: old record in, new record (or None) out.

Each function is a `ConversationChange` once its other arguments are bound, so a store can
apply it atomically — and a Redis store may call it twice — without any side effect leaking.
None means "nothing to change".

| event                         | status after                        | deadline after        |
|-------------------------------|-------------------------------------|-----------------------|
| REQUEST / HANDOFF             | open (owner `to` moves to target)   | now + its timeout     |
| CLARIFY                       | clarifying                          | now + CLARIFY timeout |
| answer (counts as a REQUEST)  | open                                | now + REQUEST timeout |
| RESPONSE                      | its Status (done when missing)      | none                  |
| BROADCAST                     | open                                | Expires, else timeout |
| deadline passed (sweep)       | timeout; expired after a BROADCAST  | none                  |
| close (relay)                 | the status given                    | none                  |
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bridge.store.records import Conversation, HistoryEntry
from bridge.tracking.errors import ConversationClosed, UnknownConversation
from bridge.tracking.messages import TrackedMessage, content_of, depth_of, fingerprint
from bridge.tracking.scope import same_chat
from bridge.tracking.vocabulary import (
    ACTIVE_STATUSES,
    ANSWER,
    BRIDGE,
    BROADCAST,
    CLARIFY,
    CLARIFYING,
    CLOSE,
    DONE,
    EXPIRED,
    EXPIRED_STATUS,
    FINISHED_STATUSES,
    HANDOFF,
    OPEN,
    REQUEST,
    RESPONSE,
    RESPONSE_STATUSES,
    TIMED_OUT,
    TIMEOUT,
)


def on_message(
    current: Conversation | None,
    message: TrackedMessage,
    *,
    now: datetime,
    chat: str | None,
    timeouts: dict[str, timedelta],
    key: str | None = None,
) -> Conversation | None:
    """A protocol message was seen; an exact repeat of one already in the history is ignored,
    and so is a message from another chat than the one the conversation belongs to
    (bridge.tracking.scope). `key` is the store key when it is not the message's own id."""
    if current is not None and not same_chat(current.chat, chat):
        return None
    kind = str(message.type)  # a StrEnum from the parser; store the plain word
    digest = fingerprint(message)
    if current is not None and any(entry.fingerprint == digest for entry in current.history):
        return None
    status = status_after(message)
    deadline = deadline_after(message, status, now, timeouts)
    entry = HistoryEntry(
        type=kind,
        from_=message.from_ or "",
        to=message.to or "",
        status=status,
        at=now,
        content=content_of(message),
        fingerprint=digest,
    )
    task = message.task if kind != BROADCAST else content_of(message)
    if current is None:
        requester, owner = message.from_ or "", message.to or ""
        if kind in (RESPONSE, CLARIFY):
            # A reply seen without its request: the requester is whom it is addressed to.
            requester, owner = owner, requester
        return Conversation(
            request_id=key or message.request_id,
            type=kind,
            from_=requester,
            to=owner,
            status=status,
            created_at=now,
            updated_at=now,
            last_type=kind,
            task=task,
            depth=depth_of(message),
            original_from=message.original_from or requester,
            chat=chat,
            deadline=deadline,
            history=(entry,),
        )
    # Every field spelled out rather than `dataclasses.replace`, which looks the fields up
    # again on every call (a third of this function's time).
    return Conversation(
        request_id=current.request_id,
        type=current.type,
        from_=current.from_,
        to=(message.to or current.to) if kind in (REQUEST, HANDOFF) else current.to,
        status=status,
        created_at=current.created_at,
        updated_at=now,
        last_type=kind,
        task=current.task or task,
        depth=depth_of(message) or current.depth,
        original_from=current.original_from or message.original_from,
        chat=current.chat or chat,
        deadline=deadline,
        history=(*current.history, entry),
    )


def on_answer(
    current: Conversation | None,
    *,
    request_id: str,
    from_: str,
    text: str,
    now: datetime,
    timeouts: dict[str, timedelta],
) -> Conversation:
    """Someone answered the owner's CLARIFY outside the protocol (e.g. a human reply)."""
    if current is None:
        raise UnknownConversation(request_id)
    if current.status not in ACTIVE_STATUSES:
        raise ConversationClosed(request_id, current.status)
    entry = HistoryEntry(ANSWER, from_, current.to, OPEN, now, text)
    # An answer does what a REQUEST answering the CLARIFY would: it counts as one.
    return replace(
        current,
        status=OPEN,
        updated_at=now,
        last_type=REQUEST,
        deadline=now + timeouts[REQUEST],
        history=(*current.history, entry),
    )


def on_close(
    current: Conversation | None,
    *,
    request_id: str,
    status: str,
    reason: str,
    now: datetime,
    by: str = BRIDGE,
) -> Conversation | None:
    """The relay ends a conversation itself; closing it again with the same status is a no-op."""
    if status not in FINISHED_STATUSES:
        raise ValueError(
            f"cannot close {request_id!r} as {status!r};"
            f" expected one of {', '.join(sorted(FINISHED_STATUSES))}"
        )
    if current is None:
        raise UnknownConversation(request_id)
    if current.finished and current.status == status:
        return None
    return _finish(current, CLOSE, status, reason, now, by)


def on_deadline(current: Conversation | None, *, now: datetime) -> Conversation | None:
    """The sweep reached this conversation; close it if its deadline has really passed.

    Re-checked here because another update may have moved the deadline since `due` looked.
    """
    if current is None or current.deadline is None or current.deadline > now:
        return None
    if current.last_type == BROADCAST:
        return _finish(current, EXPIRED, EXPIRED_STATUS, "broadcast expired", now, BRIDGE)
    waited_for = "answer" if current.status == CLARIFYING else "response"
    reason = f"no {waited_for} after {current.last_type}"
    return _finish(current, TIMEOUT, TIMED_OUT, reason, now, BRIDGE)


def status_after(message: TrackedMessage) -> str:
    """The status a message leaves its conversation in.

    A RESPONSE without a Status (the parser also maps an unknown one to none) counts as
    done: the owner answered, and the Result in the history says what the answer was.
    """
    if message.type == RESPONSE:
        return message.status if message.status in RESPONSE_STATUSES else DONE
    if message.type == CLARIFY:
        return CLARIFYING
    return OPEN


def deadline_after(
    message: TrackedMessage, status: str, now: datetime, timeouts: dict[str, timedelta]
) -> datetime | None:
    if status not in ACTIVE_STATUSES:
        return None
    if message.type == BROADCAST:
        expires = parse_expires(message.expires)
        if expires is not None:
            return expires
    return now + timeouts[str(message.type)]


def parse_expires(text: str | None) -> datetime | None:
    """An ISO-8601 `Expires` value as aware UTC (naive means UTC), or None if unreadable."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
        if moment.tzinfo is None:
            return moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC)
    except (TypeError, ValueError, OverflowError):  # e.g. year 1 at +01:00 is year 0 in UTC
        return None


def _finish(
    current: Conversation, event: str, status: str, reason: str, now: datetime, by: str
) -> Conversation:
    # `last_type` stays the last protocol message's: it says what the conversation waited on.
    entry = HistoryEntry(event, by, current.from_, status, now, reason)
    return replace(
        current,
        status=status,
        updated_at=now,
        deadline=None,
        history=(*current.history, entry),
    )
