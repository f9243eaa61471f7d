"""Protocol messages for the tracker tests (a stand-in until bridge.protocol lands)."""

from dataclasses import dataclass, field
from typing import NamedTuple


class Depth(NamedTuple):
    current: int
    max: int


@dataclass(frozen=True)
class Message:
    type: str
    to: str
    from_: str
    request_id: str | None
    task: str | None = None
    result: str | None = None
    status: str | None = None
    question: str | None = None
    message: str | None = None
    context: str | None = None
    depth: Depth | None = None
    callback: str | None = None
    priority: str | None = None
    original_from: str | None = None
    expires: str | None = None
    meta: dict[str, str] = field(default_factory=dict)
    raw: str = ""


def request(rid: str = "lotbot-abc123", to: str = "Weather", from_: str = "Lotbot", *,
            task: str = "Check the weather in Paris", depth: tuple[int, int] = (1, 5),
            **more: str) -> Message:  # fmt: skip
    return Message("REQUEST", to, from_, rid, task=task, depth=Depth(*depth), **more)


def response(rid: str = "lotbot-abc123", to: str = "Lotbot", from_: str = "Weather", *,
             status: str | None = "done", result: str = "18°C, partly cloudy",
             depth: tuple[int, int] = (2, 5)) -> Message:  # fmt: skip
    return Message("RESPONSE", to, from_, rid, result=result, status=status, depth=Depth(*depth))


def clarify(rid: str = "lotbot-abc123", to: str = "Lotbot", from_: str = "Weather", *,
            question: str = "Which date?", depth: tuple[int, int] = (2, 5)) -> Message:  # fmt: skip
    return Message("CLARIFY", to, from_, rid, question=question, depth=Depth(*depth))


def handoff(rid: str = "lotbot-abc123", to: str = "Forecast", from_: str = "Weather", *,
            task: str = "Check the weather in Paris", depth: tuple[int, int] = (2, 5),
            callback: str | None = "@Weather") -> Message:  # fmt: skip
    return Message("HANDOFF", to, from_, rid, task=task, depth=Depth(*depth), callback=callback)


def broadcast(rid: str = "lotbot-bcast-001", from_: str = "Lotbot", *,
              message: str = "Going offline in 5 minutes", expires: str | None = None,
              ) -> Message:  # fmt: skip
    return Message("BROADCAST", "all", from_, rid, message=message, depth=Depth(1, 5),
                   expires=expires)  # fmt: skip
