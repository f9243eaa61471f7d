"""Matrix API errors → the core's send errors, and 429s with their `retry_after_ms`.

mautrix turns an error answer into an exception by its `errcode` but keeps neither the
body's `retry_after_ms` nor a `Retry-After` header. The adapter's HTTP session therefore
reads 429 answers with `RateLimitedResponse`, which raises `RateLimited` (an
`MLimitExceeded`) carrying the wait, so the outbox can wait exactly that long.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import ClientError, ClientResponse
from mautrix.errors import (
    IntentError,
    MatrixConnectionError,
    MatrixRequestError,
    MLimitExceeded,
    MUnknownToken,
)

from bridge.core.adapter import (
    AdapterStartError,
    PermanentSendError,
    SendError,
    TransientSendError,
)
from bridge.logs import redact


class RateLimited(MLimitExceeded):
    """429 M_LIMIT_EXCEEDED; `retry_after` in seconds when the homeserver said."""

    def __init__(self, message: str, retry_after: float | None) -> None:
        super().__init__(429, message)
        self.errcode = "M_LIMIT_EXCEEDED"
        self.retry_after = retry_after


class RateLimitedResponse(ClientResponse):
    """An aiohttp response that turns a 429's JSON body into `RateLimited` as mautrix reads
    it (mautrix raises whatever `json()` raises, past its own error mapping)."""

    async def json(self, *args: Any, **kwargs: Any) -> Any:
        data = await super().json(*args, **kwargs)
        if self.status == 429:
            raise RateLimited(_message(data), retry_after_seconds(data, self.headers))
        return data


def _message(data: Any) -> str:
    return str(data.get("error", "Too Many Requests")) if isinstance(data, dict) else ""


def retry_after_seconds(data: Any, headers: Any) -> float | None:
    """`retry_after_ms` from the body (r0 … v1.x), else the `Retry-After` header (v1.10+)."""
    if isinstance(data, dict):
        wait = data.get("retry_after_ms")
        if isinstance(wait, int | float) and wait >= 0:
            return float(wait) / 1000
    header = headers.get("Retry-After") if headers is not None else None
    if header and header.strip().isdigit():
        return float(header.strip())
    return None


def send_error(exc: BaseException, action: str) -> SendError:
    """The core's view of a failed API call (never with a token in it)."""
    detail = redact(f"{action}: {type(exc).__name__}: {exc}")
    if isinstance(exc, MLimitExceeded):
        return TransientSendError(detail, retry_after=getattr(exc, "retry_after", None))
    if isinstance(exc, MatrixConnectionError | ClientError | asyncio.TimeoutError):
        return TransientSendError(detail)
    if isinstance(exc, MatrixRequestError):
        status = getattr(exc, "http_status", 0) or 0
        if status >= 500 or status in (0, 408):
            return TransientSendError(detail)
        return PermanentSendError(detail)
    if isinstance(exc, IntentError):
        cause = exc.__cause__
        if cause is not None and cause is not exc:
            return send_error(cause, action)
        return PermanentSendError(detail)
    return PermanentSendError(detail)


class MatrixStartError(AdapterStartError):
    """The account could not start; the message is safe to log and says what to fix."""


def start_error(exc: BaseException, account: str, homeserver: str) -> MatrixStartError:
    where = f"accounts.matrix.{account}"
    if isinstance(exc, MUnknownToken) or getattr(exc, "http_status", None) == 401:
        return MatrixStartError(
            f"matrix:{account}: the homeserver rejected the as_token (check {where}.as_token "
            "against the registration file the homeserver loads, then restart both)")
    if isinstance(exc, MatrixRequestError) and getattr(exc, "http_status", 0) < 500:
        return MatrixStartError(
            f"matrix:{account}: the homeserver refused the bridge user "
            f"({redact(str(exc))}); check that {where}.bot_localpart is the registration's "
            "sender_localpart")
    return MatrixStartError(
        f"matrix:{account} could not reach the homeserver at {homeserver}: "
        f"{redact(f'{type(exc).__name__}: {exc}')}; check {where}.homeserver, then start "
        "again (an orchestrator restarts it for you)")
