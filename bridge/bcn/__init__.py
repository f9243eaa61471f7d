"""The BCN wire: frames, error codes and the shared connection object."""

from bridge.bcn.connection import Connection, EventHandler, RequestHandler
from bridge.bcn.errors import BcnError, ConnectionClosed, ErrorCode
from bridge.bcn.frames import Event, MalformedFrame, Request, Response, decode_frame

__all__ = [
    "BcnError",
    "Connection",
    "ConnectionClosed",
    "ErrorCode",
    "Event",
    "EventHandler",
    "MalformedFrame",
    "Request",
    "RequestHandler",
    "Response",
    "decode_frame",
]
