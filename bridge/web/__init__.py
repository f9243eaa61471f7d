"""The bridge's one HTTP server, shared by every adapter that needs HTTP (webchat, webhooks)."""

from bridge.web.server import WebServer, parse_listen

__all__ = ["WebServer", "parse_listen"]
