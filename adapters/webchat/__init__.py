"""The webchat channel: a chat page served by the bridge itself (see docs/webchat.md)."""

from adapters.webchat.adapter import WebchatAdapter
from adapters.webchat.config import WebchatAccountConfig

__all__ = ["WebchatAccountConfig", "WebchatAdapter"]
