"""Which pages may send a request that acts for a browser's user: a check of `Origin`.

A WebSocket is not bound by the same-origin policy, and a form may be posted from any site:
any page a visitor opens elsewhere could open this bridge's webchat socket as them
(cross-site WebSocket hijacking) or post to the dashboard in an operator's browser.
Browsers send `Origin` with both, so it is checked: the page's own origin (the host the
request was sent to) may always; `allowed` lists others (a site embedding the webchat),
`["*"]` allows any. A request with no `Origin` is not from a browser page — a script could
send any header it liked — and is let through. `Origin: null` (a sandboxed or privacy-
stripped page) names no site and is refused unless `"*"` is allowed.
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
    return (f"pages from {origin[:100]!r} are not allowed here: only this server's own pages "
            "are, and the origins allowed_origins lists")
