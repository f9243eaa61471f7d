"""The bridge's one HTTP server, shared by every adapter that needs HTTP (webchat, webhooks)."""

from bridge.listen import parse_listen
from bridge.web.server import WebServer

__all__ = ["WebServer", "parse_listen"]
