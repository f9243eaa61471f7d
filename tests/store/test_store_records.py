"""The records build as the dataclasses they are (their `__init__` is a cheaper one with the
same parameters: bridge.store.records, `_direct_init`)."""

import dataclasses
import inspect
from datetime import UTC, datetime

import pytest

from bridge.store.records import Conversation, HistoryEntry

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def plain(cls: type) -> type:
    """The same fields in a plain frozen, slotted dataclass: what the record would be with
    the `__init__` dataclasses generates."""
    specs = [
        (field.name, field.type)
        if field.default is dataclasses.MISSING
        else (field.name, field.type, dataclasses.field(default=field.default))
        for field in dataclasses.fields(cls)
    ]
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=True, slots=True)


@pytest.mark.parametrize("cls", [Conversation, HistoryEntry])
def test_the_constructor_takes_what_the_dataclass_would(cls: type) -> None:
    assert inspect.signature(cls) == inspect.signature(plain(cls))


def test_a_record_holds_what_it_was_given_and_stays_frozen() -> None:
    entry = HistoryEntry("REQUEST", "Lotbot", "Weather", "open", T0, fingerprint="fp")
    conversation = Conversation(
        "lotbot-1", "REQUEST", "Lotbot", "Weather", "open", T0, T0, "REQUEST",
        history=(entry,),
    )  # fmt: skip
    assert dataclasses.astuple(entry) == ("REQUEST", "Lotbot", "Weather", "open", T0, None, "fp")
    assert (conversation.task, conversation.depth, conversation.deadline) == (None, None, None)
    assert conversation.history == (entry,)
    same = plain(Conversation)(**{f.name: getattr(conversation, f.name)
                                  for f in dataclasses.fields(Conversation)})  # fmt: skip
    assert dataclasses.astuple(same) == dataclasses.astuple(conversation)
    assert dataclasses.replace(conversation, status="done").status == "done"
    assert hash(conversation) == hash(dataclasses.replace(conversation))
    with pytest.raises(dataclasses.FrozenInstanceError):
        conversation.status = "done"  # type: ignore[misc]
    with pytest.raises(TypeError, match="missing"):
        HistoryEntry("REQUEST", "Lotbot")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword"):
        HistoryEntry("REQUEST", "Lotbot", "Weather", "open", T0, colour="red")  # type: ignore[call-arg]
