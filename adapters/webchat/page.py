"""The webchat page and its two static files, served with a strict Content-Security-Policy.

The page is plain HTML, one script and one stylesheet shipped inside the package: no build
step, no CDN, no external fonts. The CSP allows nothing but this origin, so even if a bot's
HTML slipped past the core's sanitizer it could neither run script nor load anything.
"""

from __future__ import annotations

import html
from importlib import resources

from aiohttp import web

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)

SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}

STATIC_FILES = {
    "webchat.js": "text/javascript",
    "webchat.css": "text/css",
}


def _static_text(name: str) -> str:
    return resources.files("adapters.webchat").joinpath("static", name).read_text("utf-8")


class WebchatPage:
    """Renders the page for one account (its title and URL base) and serves its assets."""

    def __init__(self, title: str, base: str) -> None:
        self.base = base
        self._index = (
            _static_text("index.html")
            .replace("{{title}}", html.escape(title))
            .replace("{{base}}", html.escape(base))
        )
        self._assets = {name: _static_text(name) for name in STATIC_FILES}

    async def index(self, request: web.Request) -> web.Response:
        return web.Response(
            text=self._index,
            content_type="text/html",
            headers={**SECURITY_HEADERS, "Cache-Control": "no-store"},
        )

    async def asset(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in self._assets:
            raise web.HTTPNotFound()
        return web.Response(
            text=self._assets[name],
            content_type=STATIC_FILES[name],
            headers={**SECURITY_HEADERS, "Cache-Control": "no-cache"},
        )
