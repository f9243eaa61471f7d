"""The bot-to-bot text protocol: parse chat text into messages, build canonical text.

Pure functions over plain data (no I/O, no clock); see docs/protocol.md for the
dialects, the agreement with the reference library and every deliberate difference.
"""

from bridge.protocol.builder import (
    build_broadcast,
    build_clarify,
    build_handoff,
    build_request,
    build_response,
    escape_value,
    generate_request_id,
)
from bridge.protocol.depth import DEFAULT_DEPTH, MAX_DEPTH_CAP, Depth, next_depth
from bridge.protocol.locate import find_block
from bridge.protocol.model import PRIORITIES, STATUSES, MessageType, ProtocolMessage
from bridge.protocol.options import MAX_OPTION_LENGTH, MAX_OPTIONS, format_options, options_of
from bridge.protocol.parser import parse

__all__ = [
    "DEFAULT_DEPTH",
    "MAX_DEPTH_CAP",
    "MAX_OPTIONS",
    "MAX_OPTION_LENGTH",
    "PRIORITIES",
    "STATUSES",
    "Depth",
    "MessageType",
    "ProtocolMessage",
    "build_broadcast",
    "build_clarify",
    "build_handoff",
    "build_request",
    "build_response",
    "escape_value",
    "find_block",
    "format_options",
    "generate_request_id",
    "next_depth",
    "options_of",
    "parse",
]
