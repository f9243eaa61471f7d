"""The JSON frames the page and the server exchange over the WebSocket.

Browsers send anything (half-written JSON, wrong types, megabytes of text), so every client
frame is parsed here into a typed model or rejected with a `FrameError` that names what was
wrong; the connection answers it with an `error` frame and keeps going.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError

from bridge.fastjson import dumps, loads

ClientToken = Annotated[str, StringConstraints(min_length=1, max_length=100, pattern=r"^[\w.:-]+$")]
"""Ids the page makes up itself (its client id, its message ids): short and plain."""


class _ClientFrame(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class JoinFrame(_ClientFrame):
    """Enter a room under a display name (switching rooms if already in one)."""

    type: Literal["join"]
    room: str = Field(max_length=200)
    name: str = Field(max_length=1000)
    client_id: ClientToken | None = None
    """The id the server issued to this page before (kept across reloads); anything else
    is ignored and the server's new one is used."""


class SendFrame(_ClientFrame):
    """Post a message; `client_message_id` is kept across resends so retries are harmless."""

    type: Literal["message"]
    client_message_id: ClientToken
    text: str
    reply_to: str | None = Field(None, max_length=64)
    """The id of the room's message this one replies to (the page's Reply action)."""


class PingFrame(_ClientFrame):
    type: Literal["ping"]


class TapFrame(_ClientFrame):
    """A press on a card's button (`data` as the server drew it), or the card's own-words
    answer (`text`). Who pressed is the session's member, never anything in the frame."""

    type: Literal["tap"]
    tap_id: ClientToken
    data: str = Field(max_length=100)
    text: str | None = Field(None, max_length=4000)


AnyClientFrame = JoinFrame | SendFrame | PingFrame | TapFrame
ClientFrame = Annotated[AnyClientFrame, Field(discriminator="type")]
_CLIENT_FRAME: TypeAdapter[AnyClientFrame] = TypeAdapter(ClientFrame)
CLIENT_FRAME_TYPES = ("join", "message", "ping", "tap")


class FrameError(ValueError):
    """A client frame the server refuses; `code` is machine-readable, the message is for people."""

    def __init__(self, code: str, message: str, *, client_message_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.client_message_id = client_message_id

    def to_frame(self) -> dict[str, Any]:
        return error_frame(self.code, str(self), client_message_id=self.client_message_id)


def parse_client_frame(raw: str) -> AnyClientFrame:
    """One text frame from the page → a typed frame, or `FrameError`; never anything else."""
    try:
        data = loads(raw)
    except (ValueError, RecursionError):
        raise FrameError("bad_frame", "frames must be JSON objects") from None
    if not isinstance(data, dict):
        raise FrameError("bad_frame", "frames must be JSON objects")
    frame_type = data.get("type")
    if frame_type not in CLIENT_FRAME_TYPES:
        known = ", ".join(CLIENT_FRAME_TYPES)
        shown = repr(frame_type)[:40]
        raise FrameError("unknown_type", f"unknown frame type {shown}; expected {known}")
    try:
        return _CLIENT_FRAME.validate_python(data)
    except ValidationError as error:
        client_message_id = data.get("client_message_id")
        raise FrameError(
            "bad_frame",
            f"bad {frame_type!r} frame: {_describe(error)}",
            client_message_id=_echoable(client_message_id),
        ) from None


def _echoable(client_message_id: object) -> str | None:
    """The frame's message id, if it is short enough to send back so the page can match it."""
    if isinstance(client_message_id, str) and 0 < len(client_message_id) <= 100:
        return client_message_id
    return None


def _describe(error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False)[:3]:
        where = ".".join(str(part) for part in item["loc"][1:]) or "frame"
        problems.append(f"{where}: {item['msg']}")
    return "; ".join(problems)


def error_frame(code: str, message: str, *, client_message_id: str | None = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": "error", "code": code, "message": message}
    if client_message_id is not None:
        frame["client_message_id"] = client_message_id
    return frame


def encode(frame: dict[str, Any]) -> str:
    """Server frames → JSON; odd values (datetimes in a request's deadline) become strings."""
    return dumps(frame, default=str)
