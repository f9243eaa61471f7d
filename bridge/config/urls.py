"""The one check of an http(s) URL in an account config (an API root, a public URL).

Every platform's config has such keys, and each adapter used to carry its own copy of the
check. Use it as a pydantic field validator next to the model:

    _urls = field_validator("api_base_url", "public_url")(http_url)

The config loader puts the key's path in front of the message
(`accounts.discord.main.api_base_url: expected an http:// or https:// URL`), so the message
says only what was expected. It never quotes the value: a URL may carry a token.
"""

from __future__ import annotations

from urllib.parse import urlsplit

EXPECTED = "expected an http:// or https:// URL"


def is_http_url(value: str) -> bool:
    """An http:// or https:// URL with a host."""
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc) and "://" in value


def http_url(value: str | None) -> str | None:
    """`value` without a trailing "/" (callers append paths), or ValueError; None stays."""
    if value is None:
        return value
    if not is_http_url(value):
        raise ValueError(EXPECTED)
    return value.rstrip("/")


def http_api_root(value: str) -> str:
    """`value` with exactly one trailing "/", for clients that append method names
    directly (slack_sdk: "…/api/" + "chat.postMessage"), or ValueError."""
    checked = http_url(value)
    assert checked is not None
    return checked + "/"
