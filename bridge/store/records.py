"""The records the conversation concern persists.

They live with the store, not the tracker, so that every store implementation and every
reader (tracker, CLI, dashboard) share one shape without the store importing the state
machine. Records are frozen: a change is a new record, which is what lets a store apply a
change atomically (or retry it, on Redis) without anyone seeing a half-updated object.
`__slots__` keeps an open conversation well under 2 KB in the memory store.

A record is made for every tracked message and for every conversation a store reads, so
their `__init__` is `_direct_init`'s rather than the dataclass's (the same parameters and
defaults, the same record, in under half the time).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from datetime import datetime
from typing import Any, TypeVar

_Record = TypeVar("_Record", bound=type)


def _direct_init(cls: _Record) -> _Record:
    """Give a frozen, slotted dataclass an `__init__` that stores each field through its
    slot's descriptor.

    The generated `__init__` must go through `object.__setattr__` for each field (the class
    refuses `self.x = ...`), a lookup and a call that make up most of the cost of a record;
    the slot's own `__set__` does the same store directly. The parameters (names, order,
    defaults) are the dataclass's own, so construction, `dataclasses.replace` and the
    frozen, compared, hashed record are all as before.
    """
    namespace: dict[str, Any] = {}
    parameters, body = [], []
    for field in fields(cls):
        name = field.name
        assert field.init and field.default_factory is MISSING, f"{cls.__name__}.{name}"
        namespace[f"_set_{name}"] = cls.__dict__[name].__set__
        if field.default is MISSING:
            parameters.append(name)
        else:
            namespace[f"_default_{name}"] = field.default
            parameters.append(f"{name}=_default_{name}")
        body.append(f"    _set_{name}(self, {name})")
    source = f"def __init__(self, {', '.join(parameters)}):\n" + "\n".join(body)
    exec(source, namespace)  # the text is built above from the class's own field names
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init
    return cls


@_direct_init
@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One thing that happened to a conversation.

    `type` is a protocol message type, or one of the tracker's own events (`ANSWER`,
    `CLOSE`, `TIMEOUT`, `EXPIRED`). `status` is the conversation's status after the entry.
    `fingerprint` identifies the protocol message that caused it, so that seeing the same
    message again can be recognised and ignored.
    """

    type: str
    from_: str
    to: str
    status: str
    at: datetime
    content: str | None = None
    fingerprint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "from": self.from_,
            "to": self.to,
            "status": self.status,
            "at": self.at.isoformat(),
            "content": self.content,
        }


@_direct_init
@dataclass(frozen=True, slots=True)
class Conversation:
    """A tracked protocol conversation, keyed by its request id.

    `type` is the type of the opening message and `last_type` the type of the latest
    protocol message (an answer to a CLARIFY counts as a REQUEST; the tracker's own
    TIMEOUT/EXPIRED/CLOSE entries leave it alone, so it still says what the conversation
    waited on); `to` is the current owner (it moves on HANDOFF). `depth` is
    `(current, max)` of the latest message that carried one. `deadline` is set exactly
    while the conversation waits for something; a finished conversation has none, which is
    how stores tell finished from waiting without knowing the state machine.
    """

    request_id: str
    type: str
    from_: str
    to: str
    status: str
    created_at: datetime
    updated_at: datetime
    last_type: str
    task: str | None = None
    depth: tuple[int, int] | None = None
    original_from: str | None = None
    chat: str | None = None
    deadline: datetime | None = None
    history: tuple[HistoryEntry, ...] = ()

    @property
    def finished(self) -> bool:
        return self.deadline is None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view, for the CLI and the dashboard."""
        return {
            "request_id": self.request_id,
            "type": self.type,
            "from": self.from_,
            "to": self.to,
            "status": self.status,
            "task": self.task,
            "depth": list(self.depth) if self.depth else None,
            "original_from": self.original_from,
            "chat": self.chat,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "deadline": self.deadline.isoformat() if self.deadline else None,
            "last_type": self.last_type,
            "history": [entry.to_dict() for entry in self.history],
        }
