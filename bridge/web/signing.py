"""HMAC-signed, expiring URLs.

Platform files (a Telegram photo, say) can only be fetched with the platform token in the URL;
the bridge serves them itself through a path signed here instead, so that no platform secret
ever reaches a chat, a log line or a browser.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from urllib.parse import parse_qs, urlsplit

EXPIRES_PARAM = "expires"
SIGNATURE_PARAM = "sig"


class SignatureError(ValueError):
    """A signed URL cannot be trusted."""


class InvalidSignature(SignatureError):
    """Missing, malformed or wrong signature: the URL was not made by this bridge, or altered."""


class ExpiredSignature(SignatureError):
    """The signature is genuine but its time is up."""


def _key(secret: str | bytes) -> bytes:
    key = secret.encode() if isinstance(secret, str) else bytes(secret)
    if not key:
        raise ValueError("the URL signing secret must not be empty")
    return key


def signature(path: str, expires_at: int, secret: str | bytes) -> str:
    """The URL-safe signature of `path` valid until `expires_at` (Unix seconds)."""
    message = f"{int(expires_at)}\n{path}".encode()
    digest = hmac.new(_key(secret), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def sign(path: str, expires_at: int, secret: str | bytes) -> str:
    """`path?expires=…&sig=…`; `path` is the URL path exactly as it will be requested."""
    if "?" in path or "#" in path:
        raise ValueError("sign a bare path; query strings and fragments are not covered")
    expires = int(expires_at)
    sig = signature(path, expires, secret)
    return f"{path}?{EXPIRES_PARAM}={expires}&{SIGNATURE_PARAM}={sig}"


def verify(
    path: str,
    expires_at: int | str,
    sig: str,
    secret: str | bytes,
    *,
    now: float | None = None,
) -> None:
    """Raise `InvalidSignature` or `ExpiredSignature` unless `sig` is valid for `path` now."""
    try:
        expires = int(expires_at)
    except (TypeError, ValueError):
        raise InvalidSignature("the expiry is not a whole number of seconds") from None
    expected = signature(path, expires, secret)
    given = sig.encode("utf-8", "surrogatepass") if isinstance(sig, str) else b""
    if not hmac.compare_digest(expected.encode("ascii"), given):
        raise InvalidSignature("the signature does not match this URL")
    current = time.time() if now is None else now
    if current >= expires:
        raise ExpiredSignature("this link has expired")


def verify_url(url: str, secret: str | bytes, *, now: float | None = None) -> str:
    """Check a URL made by `sign` (absolute or path-only) and return its path.

    With aiohttp, pass `request.raw_path` (the path as requested, still percent-encoded).
    """
    parts = urlsplit(url)
    query = parse_qs(parts.query, keep_blank_values=True)
    expires = query.get(EXPIRES_PARAM, [])
    sigs = query.get(SIGNATURE_PARAM, [])
    if len(expires) != 1 or len(sigs) != 1:
        raise InvalidSignature("the URL carries no single expiry and signature")
    verify(parts.path, expires[0], sigs[0], secret, now=now)
    return parts.path
