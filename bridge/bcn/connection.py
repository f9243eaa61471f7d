"""One BCN WebSocket connection: request/response correlation, pipelining, events.

Written once and shared by the hub (server side of `/ws/bot` and `/ws/channel`), the
bridge's channel-link client and the bot SDK. Requests flow both ways and may be
pipelined: each incoming `req` runs in its own task (started in arrival order), each
outgoing `request()` waits on a future keyed by its id. A malformed frame is answered
with `invalid_request` and the connection stays up.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import aiohttp

from bridge.bcn.errors import BcnError, ConnectionClosed, ErrorCode
from bridge.bcn.frames import (
    Event,
    Frame,
    MalformedFrame,
    Request,
    Response,
    decode_frame,
    encode_error,
    encode_event,
    encode_ok,
    encode_request,
)

log = logging.getLogger(__name__)

RequestHandler = Callable[[Request], Awaitable[dict[str, Any] | None]]
"""Answers one incoming request; raise `BcnError` to answer with an error."""

EventHandler = Callable[[Event], Awaitable[None]]
"""Consumes one incoming event. Awaited inline, so events are handled in order; it must
not wait for a response on the same connection (that would stall the read loop)."""


class WebSocketLike(Protocol):
    """What both aiohttp's client and server WebSocket objects offer."""

    @property
    def closed(self) -> bool: ...

    async def send_str(self, data: str, compress: int | None = None) -> None: ...

    async def receive(self, timeout: float | None = None) -> aiohttp.WSMessage: ...

    async def close(self, *, code: int = ..., message: bytes = ...) -> bool: ...


_DATA_TYPES = (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY)
_PING, _PONG = aiohttp.WSMsgType.PING, aiohttp.WSMsgType.PONG

_PROCESS_TAG = secrets.token_hex(6)
"""Random per process start: request ids of a restarted hub never repeat earlier ones."""
_REQUEST_NUMBERS = itertools.count(1)
"""Shared by every connection of the process: ids never repeat across reconnects either.

Peers remember the ids they have seen (the BCN server's own clients treat a repeated
`chat.send` id as a duplicate and silently drop it), so per-connection numbering that
restarts at 1 loses messages after any reconnect.
"""


def new_request_id(name: str) -> str:
    """An id unique across connections and process restarts: `{name}-{tag}-{n}`."""
    return f"{name}-{_PROCESS_TAG}-{next(_REQUEST_NUMBERS)}"
_END_TYPES = (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED,
              aiohttp.WSMsgType.ERROR)


class Connection:
    def __init__(
        self,
        ws: WebSocketLike,
        *,
        on_request: RequestHandler | None = None,
        on_event: EventHandler | None = None,
        name: str = "bcn",
        request_timeout: float = 30.0,
    ) -> None:
        self.ws = ws
        self.on_request = on_request
        self.on_event = on_event
        self.name = name
        self.request_timeout = request_timeout
        self._seq = itertools.count(1)
        self._pongs: dict[bytes, asyncio.Future[None]] = {}
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._handlers: set[asyncio.Task[None]] = set()
        self._closed_event = asyncio.Event()

    # ---------------------------------------------------------------- sending
    @property
    def closed(self) -> bool:
        return self._closed_event.is_set() or self.ws.closed

    async def _send(self, text: str) -> None:
        if self.closed:
            raise ConnectionClosed(f"{self.name}: connection is closed")
        try:
            await self.ws.send_str(text)
        except (ConnectionError, RuntimeError) as exc:
            raise ConnectionClosed(f"{self.name}: send failed: {exc}") from exc

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send a `req` and wait for its `res`; raise `BcnError` if the peer refused it."""
        return await (await self.send_request(method, params, timeout=timeout))

    async def send_request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> asyncio.Future[dict[str, Any]]:
        """Send a `req` now and return the future of its answer, without waiting for it.

        For senders that must not hold up on the peer (the hub fanning a message out to
        many bots, or pipelining deliveries): the `req` is on the wire when this returns.
        The future fails with `BcnError` (refused), `ConnectionClosed`, or `TimeoutError`
        once `timeout` (default `request_timeout`) passes without an answer.
        """
        req_id = new_request_id(self.name)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._pending[req_id] = future
        try:
            await self._send(encode_request(req_id, method, params or {}))
        except BaseException:
            self._pending.pop(req_id, None)
            raise
        delay = self.request_timeout if timeout is None else timeout
        timer = loop.call_later(delay, self._expire, req_id, method, delay)
        future.add_done_callback(lambda _f: self._forget(req_id, timer))
        return future

    def _expire(self, req_id: str, method: str, delay: float) -> None:
        future = self._pending.pop(req_id, None)
        if future is not None and not future.done():
            future.set_exception(TimeoutError(f"{self.name}: {method} not answered in {delay}s"))

    def _forget(self, req_id: str, timer: asyncio.TimerHandle) -> None:
        timer.cancel()
        self._pending.pop(req_id, None)

    async def send_event(
        self, name: str, payload: dict[str, Any], *, seq: int | None = None
    ) -> int:
        """Send an event stamped with this side's own `seq` counter; returns the seq used.

        `seq` overrides the counter: protocol v3 run events carry the run's own sequence
        number, and the outer frame's `seq` must equal it.
        """
        if seq is None:
            seq = next(self._seq)
        await self._send(encode_event(name, payload, seq))
        return seq

    async def probe(self, timeout: float) -> bool:
        """Whether the peer answers a WebSocket ping within `timeout` seconds.

        Needs a socket made with `autoping=False` (so the pong reaches `run()`); the read
        loop must be running. A socket that cannot ping is assumed alive.
        """
        ping = getattr(self.ws, "ping", None)
        if self.closed:
            return False
        if ping is None:
            return True
        token = secrets.token_bytes(8)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pongs[token] = waiter
        try:
            await ping(token)
            await asyncio.wait_for(waiter, timeout)
        except (TimeoutError, ConnectionError, RuntimeError):
            return False
        finally:
            self._pongs.pop(token, None)
        return True

    async def respond(self, req_id: str | None, payload: dict[str, Any]) -> None:
        await self._send(encode_ok(req_id, payload))

    async def respond_error(self, req_id: str | None, error: BcnError) -> None:
        await self._send(encode_error(req_id, error))

    # ---------------------------------------------------------------- receiving
    async def next_frame(self, timeout: float | None = None) -> Frame:
        """Read one frame outside the read loop (used for handshakes).

        Raises `MalformedFrame` for a frame that cannot be decoded and
        `ConnectionClosed` when the socket ends first.
        """
        while True:
            async with asyncio.timeout(timeout):
                msg = await self.ws.receive()
            if msg.type in _DATA_TYPES:
                return decode_frame(msg.data)
            if msg.type in _END_TYPES:
                raise ConnectionClosed(f"{self.name}: closed before a frame arrived")
            await self._control(msg)

    async def run(self) -> None:
        """Read frames until the socket closes, dispatching each one.

        On exit every request still waiting for an answer fails with `ConnectionClosed`.
        """
        try:
            while True:
                msg = await self.ws.receive()
                if msg.type in _DATA_TYPES:
                    await self._dispatch(msg.data)
                elif msg.type in _END_TYPES:
                    break
                else:
                    await self._control(msg)
        finally:
            self._closed_event.set()
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionClosed(f"{self.name}: connection closed"))
            self._pending.clear()

    async def _control(self, msg: aiohttp.WSMessage) -> None:
        """Pings and pongs, when the socket leaves them to us (`autoping=False`)."""
        if msg.type is _PING:
            pong = getattr(self.ws, "pong", None)
            if pong is not None:
                try:
                    await pong(msg.data)
                except (ConnectionError, RuntimeError):
                    log.debug("%s: could not answer a ping", self.name)
        elif msg.type is _PONG:
            waiter = self._pongs.get(bytes(msg.data or b""))
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    async def _dispatch(self, data: str | bytes) -> None:
        try:
            frame = decode_frame(data)
        except MalformedFrame as exc:
            log.warning("%s: malformed frame: %s", self.name, exc.message)
            await self._try_send(encode_error(exc.req_id, exc))
            return
        if isinstance(frame, Response):
            self._resolve(frame)
        elif isinstance(frame, Request):
            task = asyncio.create_task(self._answer(frame))
            self._handlers.add(task)
            task.add_done_callback(self._handlers.discard)
        elif self.on_event is not None:
            try:
                await self.on_event(frame)
            except Exception:
                log.exception("%s: event handler failed for %s", self.name, frame.event)

    def _resolve(self, frame: Response) -> None:
        future = self._pending.get(frame.id or "")
        if future is None or future.done():
            log.debug("%s: response for unknown or finished request %r", self.name, frame.id)
            return
        if frame.ok:
            future.set_result(frame.payload)
        else:
            assert frame.error is not None
            future.set_exception(frame.error)

    async def _answer(self, req: Request) -> None:
        if self.on_request is None:
            error = BcnError(ErrorCode.UNKNOWN_METHOD, f"unknown method {req.method!r}")
            await self._try_send(encode_error(req.id, error))
            return
        try:
            payload = await self.on_request(req)
        except BcnError as exc:
            await self._try_send(encode_error(req.id, exc))
        except ConnectionClosed:
            pass
        except Exception:
            log.exception("%s: handler for %s failed", self.name, req.method)
            error = BcnError(ErrorCode.INTERNAL_ERROR, f"{req.method} failed")
            await self._try_send(encode_error(req.id, error))
        else:
            await self._try_send(encode_ok(req.id, payload or {}))

    async def _try_send(self, text: str) -> None:
        """Send an answer; a peer that already went away is not an error worth raising."""
        try:
            await self._send(text)
        except ConnectionClosed:
            log.debug("%s: peer gone before the answer could be sent", self.name)

    async def close(self, code: int = 1000, message: str = "") -> None:
        self._closed_event.set()
        if not self.ws.closed:
            await self.ws.close(code=code, message=message.encode())

    async def wait_closed(self) -> None:
        await self._closed_event.wait()

    async def drain_handlers(self) -> None:
        """Wait for request handlers still running (used on orderly shutdown)."""
        if self._handlers:
            await asyncio.gather(*self._handlers, return_exceptions=True)
