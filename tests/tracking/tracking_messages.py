"""Real protocol messages for the tracker tests: canonical text, parsed by bridge.protocol."""

from bridge.protocol import (
    ProtocolMessage,
    build_broadcast,
    build_clarify,
    build_handoff,
    build_request,
    build_response,
    parse,
)


def parsed(text: str) -> ProtocolMessage:
    message = parse(text)
    assert message is not None, text
    return message


def request(rid: str = "lotbot-abc123", to: str = "Weather", from_: str = "Lotbot", *,
            task: str = "Check the weather in Paris", depth: tuple[int, int] = (1, 5),
            ) -> ProtocolMessage:  # fmt: skip
    return parsed(build_request(to=to, from_=from_, request_id=rid, task=task, depth=depth))


def response(rid: str = "lotbot-abc123", to: str = "Lotbot", from_: str = "Weather", *,
             status: str | None = "done", result: str = "18°C, partly cloudy",
             depth: tuple[int, int] = (2, 5)) -> ProtocolMessage:  # fmt: skip
    return parsed(build_response(
        to=to, from_=from_, request_id=rid, status=status, result=result, depth=depth,
    ))  # fmt: skip


def clarify(rid: str = "lotbot-abc123", to: str = "Lotbot", from_: str = "Weather", *,
            question: str = "Which date?", depth: tuple[int, int] = (2, 5),
            ) -> ProtocolMessage:  # fmt: skip
    return parsed(build_clarify(
        to=to, from_=from_, request_id=rid, question=question, depth=depth,
    ))  # fmt: skip


def handoff(rid: str = "lotbot-abc123", to: str = "Forecast", from_: str = "Weather", *,
            task: str = "Check the weather in Paris", depth: tuple[int, int] = (2, 5),
            ) -> ProtocolMessage:  # fmt: skip
    return parsed(build_handoff(
        to=to, from_=from_, request_id=rid, task=task, depth=depth, callback="@Weather",
    ))  # fmt: skip


def broadcast(rid: str = "lotbot-bcast-001", from_: str = "Lotbot", *,
              message: str = "Going offline in 5 minutes", expires: str | None = None,
              ) -> ProtocolMessage:  # fmt: skip
    return parsed(build_broadcast(
        from_=from_, request_id=rid, message=message, expires=expires, depth=(1, 5),
    ))  # fmt: skip
