"""Sign-in for the dashboard: a token exchanged for a signed, expiring session cookie.

The cookie is signed with a key derived from the token, so every bridge instance behind a
load balancer accepts the same session and rotating the token signs everyone out; no session
table is needed. It is HttpOnly (page scripts cannot read it) and SameSite=Strict (no other
site can make a browser send it); actions also need a CSRF token derived from the cookie,
which a page of ours reads from `/dashboard/api/session` and another origin cannot.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
import unicodedata
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from bridge.web.signing import ExpiredSignature, SignatureError, signature, verify

COOKIE = "bcn_dashboard"
COOKIE_PATH = "/dashboard"
CSRF_HEADER = "X-CSRF-Token"
MAX_OPERATOR_CHARS = 64
DEFAULT_OPERATOR = "operator"

LOGIN_FAILURES = 10
LOGIN_WINDOW = 300.0
"""Wrong tokens allowed per client address within the window before sign-in answers 429."""
MAX_ADDRESSES = 10_000
"""Addresses with recent failures remembered; the oldest is forgotten past it."""


@dataclass(frozen=True, slots=True)
class Session:
    operator: str
    expires_at: float
    cookie: str
    csrf: str
    """What the page sends back in `X-CSRF-Token`: derived from the cookie, not the cookie."""


class SessionError(Exception):
    """No usable session: missing, forged or expired (`expired` says which)."""

    def __init__(self, message: str, *, expired: bool = False) -> None:
        super().__init__(message)
        self.expired = expired


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def operator_name(raw: str | None) -> str:
    """A name fit for the log and the chats: printable, one line, at most 64 characters."""
    text = unicodedata.normalize("NFKC", raw or "")
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] != "C").strip()
    return text[:MAX_OPERATOR_CHARS].strip() or DEFAULT_OPERATOR


class Sessions:
    """Issues and checks session cookies for one token."""

    def __init__(
        self, token: str, *, lifetime: float, clock: Callable[[], float] = time.time
    ) -> None:
        if not token:
            raise ValueError("the dashboard token must not be empty")
        self._token = token.encode("utf-8")
        self._key = hmac.new(self._token, b"bcn-bridge dashboard session v1",
                             hashlib.sha256).digest()
        self.lifetime = lifetime
        self.clock = clock

    def token_matches(self, given: str) -> bool:
        """Constant-time comparison, whatever the lengths."""
        return hmac.compare_digest(
            hashlib.sha256(given.encode("utf-8", "surrogatepass")).digest(),
            hashlib.sha256(self._token).digest(),
        )

    def _csrf(self, cookie: str) -> str:
        return signature(f"csrf\n{cookie}", 0, self._key)[:32]

    def issue(self, operator: str) -> Session:
        expires = int(self.clock() + self.lifetime)
        payload = {"op": operator_name(operator), "n": secrets.token_hex(8)}
        body = _b64(json.dumps(payload, separators=(",", ":")).encode("utf-8"))
        cookie = f"{body}.{expires}.{signature(body, expires, self._key)}"
        return Session(payload["op"], float(expires), cookie, self._csrf(cookie))

    def check(self, cookie: str | None) -> Session:
        """The session a cookie carries; signed and timed as `bridge.web.signing` signs URLs."""
        parts = (cookie or "").split(".")
        if len(parts) != 3 or not cookie or not cookie.isascii():
            raise SessionError("not signed in")
        body, expires, sig = parts
        try:
            verify(body, expires, sig, self._key, now=self.clock())
            operator = str(json.loads(_unb64(body))["op"])
        except ExpiredSignature:
            raise SessionError("session expired", expired=True) from None
        except (SignatureError, ValueError, KeyError, TypeError):
            raise SessionError("not signed in") from None
        return Session(operator, float(expires), cookie, self._csrf(cookie))

    @staticmethod
    def csrf_matches(session: Session, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(session.csrf.encode(),
                                                   (given or "").encode("utf-8", "replace"))


class LoginThrottle:
    """Counts wrong tokens per client address, so the token cannot be guessed at speed."""

    def __init__(self, *, failures: int = LOGIN_FAILURES, window: float = LOGIN_WINDOW,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.failures = failures
        self.window = window
        self.clock = clock
        self._seen: dict[str, deque[float]] = {}

    def _recent(self, address: str) -> deque[float]:
        times = self._seen.get(address)
        if times is None:
            return deque()
        cut = self.clock() - self.window
        while times and times[0] <= cut:
            times.popleft()
        if not times:
            del self._seen[address]
        return times

    def blocked(self, address: str) -> float | None:
        """Seconds until the address may try again, or None."""
        times = self._recent(address)
        if len(times) < self.failures:
            return None
        return max(1.0, times[0] + self.window - self.clock())

    def failed(self, address: str) -> None:
        times = self._recent(address)
        if address not in self._seen:
            if len(self._seen) >= MAX_ADDRESSES:
                self._seen.pop(next(iter(self._seen)))
            self._seen[address] = times
        times.append(self.clock())
