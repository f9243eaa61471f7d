"""The embedded BCN hub: the server side of `/ws/bot` and `/ws/channel`
(the channel link), small enough to run in-process for demos and end-to-end tests."""

from bridge.hub.config import HubConfig
from bridge.hub.server import Hub

__all__ = ["Hub", "HubConfig"]
