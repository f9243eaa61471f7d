"""The embedded BCN hub: the server side of `/ws/bot` (seed 000) and `/ws/channel`
(CHANNEL_LINK.md), small enough to run in-process for demos and end-to-end tests."""

from bridge.hub.config import HubConfig
from bridge.hub.server import Hub

__all__ = ["Hub", "HubConfig"]
