"""Errors the tracker raises for requests the caller can get wrong."""

from __future__ import annotations


class TrackingError(Exception):
    """Base of the tracker's own errors."""


class UnknownConversation(TrackingError, LookupError):
    """No conversation is tracked under this request id."""

    def __init__(self, request_id: str) -> None:
        super().__init__(f"no tracked conversation with request id {request_id!r}")
        self.request_id = request_id


class ConversationClosed(TrackingError, ValueError):
    """The conversation has finished, so it cannot take an answer."""

    def __init__(self, request_id: str, status: str) -> None:
        super().__init__(f"conversation {request_id!r} is already closed ({status})")
        self.request_id = request_id
        self.status = status
