"""The opening of both hub endpoints: accept the socket, demand the handshake frame.

`/ws/bot` and `/ws/channel` open the same way — the first frame must be the endpoint's
connect request, anything else is `unauthorized` and the socket is closed — so that rule
lives here once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import WebSocketError, WSCloseCode, WSMessage, WSMsgType, web

from bridge.bcn.connection import Connection, WebSocketLike
from bridge.bcn.errors import BcnError, ConnectionClosed, ErrorCode
from bridge.bcn.frames import MalformedFrame, Request
from bridge.bcn.limits import MAX_FRAME_BYTES
from bridge.hub.config import HubConfig

log = logging.getLogger(__name__)

CLOSE_GOING_AWAY = 1001
CLOSE_REPLACED = 4001
CLOSE_EXPIRED = 4002
CLOSE_REFUSED = 1008


async def refuse(conn: Connection, req_id: str | None, error: BcnError) -> None:
    """Answer a failed handshake and close: the peer has no business on this socket."""
    try:
        await conn.respond_error(req_id, error)
    except ConnectionClosed:
        pass
    await conn.close(CLOSE_REFUSED, error.code)


async def first_request(conn: Connection, method: str, timeout: float) -> Request | None:
    """The handshake frame, or None after refusing whatever came instead."""
    try:
        frame = await conn.next_frame(timeout=timeout)
    except (TimeoutError, ConnectionClosed):
        await conn.close(CLOSE_REFUSED, "no handshake")
        return None
    except MalformedFrame as exc:
        await refuse(conn, exc.req_id, BcnError(ErrorCode.UNAUTHORIZED,
                                                f"the first frame must be {method}"))
        return None
    if not isinstance(frame, Request) or frame.method != method:
        req_id = frame.id if isinstance(frame, Request) else None
        await refuse(conn, req_id, BcnError(ErrorCode.UNAUTHORIZED,
                                            f"the first frame must be {method}"))
        return None
    return frame


def requested_version(params: dict[str, Any], *, default: int, lowest: int, newest: int) -> int:
    """The version a connect asks for: `default` when it names none; refused out of range."""
    version = params.get("protocol_version", default)
    if version is None:
        version = default
    if not isinstance(version, int) or isinstance(version, bool):
        raise BcnError(ErrorCode.INVALID_REQUEST, "protocol_version must be an integer")
    if not lowest <= version <= newest:
        raise BcnError(
            ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
            f"protocol version {version} is not supported; this hub speaks {lowest} to {newest}",
        )
    return version


async def accept(
    request: web.Request, config: HubConfig, name: str, method: str, *, autoping: bool = True
) -> tuple[web.WebSocketResponse, Connection, Request | None]:
    """Upgrade to a WebSocket and read the handshake; the frame is None when refused.

    `autoping=False` leaves pings and pongs to the `Connection`, so it can `probe()` the
    peer (the bot endpoint does, before refusing a second connection of the same bot).
    The connection's send queue and handlers are bounded by the `hub:` limits, and it
    holds the transport so that closing a peer that does not read can cut it.
    """
    ws = HubSocket(max_msg_size=MAX_FRAME_BYTES, autoping=autoping)
    ws.who = f"{name} at {request.remote}"
    await ws.prepare(request)
    conn, frame = await open_connection(ws, config, name, method, transport=request.transport)
    return ws, conn, frame


class HubSocket(web.WebSocketResponse):
    """The hub's end of a peer's WebSocket, which says why it ends when the peer sent a
    frame above `MAX_FRAME_BYTES`.

    aiohttp refuses such a frame itself and closes that socket alone with 1009 (message
    too big); the close code the hub is left with is often 1006 (the peer was still
    writing), so without this line the log shows an unexplained disconnect.
    """

    who = "a peer"

    async def receive(self, timeout: float | None = None) -> WSMessage:
        msg = await super().receive(timeout)
        if (msg.type is WSMsgType.ERROR and isinstance(msg.data, WebSocketError)
                and msg.data.code == WSCloseCode.MESSAGE_TOO_BIG):
            log.warning("%s sent a frame above %d bytes (%s; bridge.bcn.limits."
                        "MAX_FRAME_BYTES): that connection alone is closed with 1009",
                        self.who, MAX_FRAME_BYTES, msg.data)
        return msg


async def open_connection(
    ws: WebSocketLike, config: HubConfig, name: str, method: str,
    *, transport: asyncio.WriteTransport | None = None,
) -> tuple[Connection, Request | None]:
    """The hub's `Connection` on an accepted socket (a WebSocket, or the in-process link's
    `MemorySocket`), bounded by the `hub:` limits, and its handshake frame (None: refused)."""
    conn = Connection(ws, name=name, request_timeout=config.request_timeout_seconds,
                      send_queue_chars=config.send_queue_chars,
                      max_handlers=config.max_requests_in_flight, transport=transport)
    frame = await first_request(conn, method, config.handshake_timeout_seconds)
    return conn, frame
