"""The webchat channel: a chat page served by the bridge itself (see docs/webchat.md)."""

from adapters.webchat.adapter import WebchatAdapter
from adapters.webchat.config import WebchatAccount

__all__ = ["WebchatAccount", "WebchatAdapter"]
