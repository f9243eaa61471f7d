"""The error codes of the BCN wire protocol, shared by both ends."""

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
    # Codes the BCN server answers beyond the core codes (its bot WebSocket dispatcher).
    ALREADY_CONNECTED = "already_connected"
    BOT_ID_CONFLICT = "bot_id_conflict"
    GROUP_NOT_FOUND = "group_not_found"
    SESSION_NOT_FOUND = "session_not_found"
    INVALID_SESSION = "invalid_session"
    TARGET_NOT_FOUND = "target_not_found"
    NOT_DRIVER = "not_driver"
    UNSUPPORTED_SERVICE_MODE = "unsupported_service_mode"
    BOT_NOT_CONNECTED = "bot_not_connected"
    INVALID_STATUS = "invalid_status"
    # The embedded hub's own: too many registrations from one address (retryable, with
    # `retry_after_ms`).
    RATE_LIMITED = "rate_limited"


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
        # A blank message is as unreadable to strict clients as none at all.
        self.message = message if message.strip() else self.code.replace("_", " ")
        self.retryable = retryable
        self.retry_after_ms = retry_after_ms
        super().__init__(f"{self.code}: {self.message}")

    def to_payload(self) -> dict[str, Any]:
        """The wire `error` object; `retry_after_ms` only when there is a delay to give.

        Strict clients (the BCN server's own) drop a response whose `retry_after_ms` is
        present but not a non-negative integer, so `null` must never be sent.
        """
        payload: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
        }
        after = self.retry_after_ms
        if isinstance(after, int) and not isinstance(after, bool) and after >= 0:
            payload["retry_after_ms"] = after
        return payload

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
            retry_after_ms=(retry_after if isinstance(retry_after, int)
                            and not isinstance(retry_after, bool) else None),
        )


class ConnectionClosed(ConnectionError):
    """The WebSocket went away while a request was waiting for its answer."""
