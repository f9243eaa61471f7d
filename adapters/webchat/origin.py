"""Which pages may open the webchat's WebSocket: a browser check of `Origin`.

A WebSocket is not bound by the same-origin policy: any page a visitor opens elsewhere
could connect to this webchat in the visitor's browser and talk as them
(cross-site WebSocket hijacking). Browsers always send `Origin` with the handshake, so it is
checked: the page's own origin (the host the request was sent to) may always connect;
`allowed_origins` lists others (a site embedding the page), `["*"]` allows any. A handshake
with no `Origin` is not from a browser page — a script could send any header it liked — and
is let through.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web


def origin_refusal(request: web.Request, allowed: list[str] | None) -> str | None:
    """Why this handshake's `Origin` may not connect; None when it may."""
    origin = request.headers.get("Origin")
    if origin is None or urlsplit(origin).netloc.lower() == request.host.lower():
        return None  # not a page, or the webchat's own page
    listed = {entry.lower() for entry in allowed or ()}
    if "*" in listed or origin.rstrip("/").lower() in listed:
        return None
    return (f"pages from {origin[:100]!r} may not open this webchat's socket: only its own "
            "page may, and the origins its allowed_origins lists")
