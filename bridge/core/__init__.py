"""The relay core: normalized messages, bindings, the adapter interface and pipelines."""

from bridge.core.adapter import (
    Adapter,
    Capabilities,
    InboundSink,
    PermanentSendError,
    SendError,
    TransientSendError,
)
from bridge.core.binding import Binding, LoopGuard, ProtocolPolicy
from bridge.core.model import Attachment, Inbound, Outbound, OutboundKind, PlatformRef, Sender

__all__ = [
    "Adapter",
    "Attachment",
    "Binding",
    "Capabilities",
    "Inbound",
    "InboundSink",
    "LoopGuard",
    "Outbound",
    "OutboundKind",
    "PermanentSendError",
    "PlatformRef",
    "ProtocolPolicy",
    "SendError",
    "Sender",
    "TransientSendError",
]
