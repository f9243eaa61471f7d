"""The error codes of the BCN wire protocol (seed 000 §3.3), shared by both ends."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    INVALID_REQUEST = "invalid_request"
    UNAUTHORIZED = "unauthorized"
    NOT_FOUND = "not_found"
    UNAVAILABLE = "unavailable"
    UNKNOWN_METHOD = "unknown_method"
    UNKNOWN_TOOL = "unknown_tool"
    INTERNAL_ERROR = "internal_error"
    UNSUPPORTED_PROTOCOL_VERSION = "unsupported_protocol_version"


class BcnError(Exception):
    """An error that travels over the wire as a `res` with `ok: false`.

    Raised by request handlers to answer with that error, and raised by
    `Connection.request` when the peer answered with one.
    """

    def __init__(
        self,
        code: ErrorCode | str,
        message: str = "",
        *,
        retryable: bool = False,
        retry_after_ms: int | None = None,
    ) -> None:
        self.code = str(code)
        self.message = message or self.code.replace("_", " ")
        self.retryable = retryable
        self.retry_after_ms = retry_after_ms
        super().__init__(f"{self.code}: {self.message}")

    def to_payload(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
            "retry_after_ms": self.retry_after_ms,
        }

    @classmethod
    def from_payload(cls, error: Any) -> BcnError:
        """Rebuild an error from a peer's `error` object, tolerating sloppy peers."""
        if not isinstance(error, dict):
            return cls(ErrorCode.INTERNAL_ERROR, f"peer sent a malformed error: {error!r}"[:200])
        retry_after = error.get("retry_after_ms")
        return cls(
            str(error.get("code") or ErrorCode.INTERNAL_ERROR),
            str(error.get("message") or ""),
            retryable=bool(error.get("retryable", False)),
            retry_after_ms=retry_after if isinstance(retry_after, int) else None,
        )


class ConnectionClosed(ConnectionError):
    """The WebSocket went away while a request was waiting for its answer."""
