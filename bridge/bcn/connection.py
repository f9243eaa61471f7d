"""One BCN WebSocket connection: request/response correlation, pipelining, events.

Written once and shared by the hub (server side of `/ws/bot` and `/ws/channel`), the
bridge's channel-link client and the bot SDK. Requests flow both ways and may be
pipelined: each incoming `req` runs in its own task (started in arrival order), each
outgoing `request()` waits on a future keyed by its id. A malformed frame is answered
with `invalid_request` and the connection stays up.

Nothing piles up without bound (docs/hub.md, "Backpressure"): every frame goes through one
`SendQueue` of at most `send_queue_bytes` characters not yet handed to the socket, written
by one writer task, so aiohttp's own flow control (it waits for the socket to drain every
256 KiB) bounds what sits in the transport behind it. A send waits for room — the caller is
held up, not the process's memory — or, with `wait=False`, fails at once with
`SendQueueFull` for senders that must not wait (the hub fanning a message out to many
bots). `max_handlers` bounds the incoming requests handled at once: at the bound the read
loop stops reading, and the peer's own sends back up.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

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
from bridge.bcn.send_queue import SendQueue, WebSocketLike

log = logging.getLogger(__name__)

RequestHandler = Callable[[Request], Awaitable[dict[str, Any] | None]]
"""Answers one incoming request; raise `BcnError` to answer with an error."""

EventHandler = Callable[[Event], Awaitable[None]]
"""Consumes one incoming event. Awaited inline, so events are handled in order; it must
not wait for a response on the same connection (that would stall the read loop)."""


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


DEFAULT_SEND_QUEUE_CHARS = 4 * 1024 * 1024
"""Unsent characters a connection holds by default (the hub passes its own, `hub:`)."""
CLOSE_TIMEOUT = 5.0
"""How long `close()` waits for queued frames to go out and for the peer's close frame."""


class Connection:
    def __init__(
        self,
        ws: WebSocketLike,
        *,
        on_request: RequestHandler | None = None,
        on_event: EventHandler | None = None,
        name: str = "bcn",
        request_timeout: float = 30.0,
        send_queue_chars: int = DEFAULT_SEND_QUEUE_CHARS,
        max_handlers: int | None = None,
        transport: asyncio.WriteTransport | None = None,
    ) -> None:
        """`send_queue_chars` bounds what waits to be written (see `SendQueue`);
        `max_handlers` bounds the incoming requests handled at once (None: no bound);
        `transport` lets `close()` cut a peer that does not even read its close frame."""
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
        """Set once the connection is done: the read loop ended, or `close()` finished."""
        self._closing = False
        self._queue = SendQueue(ws, send_queue_chars, name, self._write_failed,
                                self._frame_dropped)
        self._closer: asyncio.Task[None] | None = None
        self._slots = asyncio.Semaphore(max_handlers) if max_handlers else None
        self._transport = transport
        self.close_code: int | None = None
        self.close_reason = ""
        """What the peer's close frame said, once it came."""

    # ---------------------------------------------------------------- sending
    @property
    def closed(self) -> bool:
        """True from the moment `close()` starts: nothing new is sent after that."""
        return self._closing or self._closed_event.is_set() or self.ws.closed

    @property
    def queued(self) -> int:
        """Characters accepted for sending and not handed to the socket yet."""
        return self._queue.size

    @property
    def peak_queued(self) -> int:
        """The most characters that ever waited to be sent on this connection."""
        return self._queue.peak

    @property
    def send_queue_limit(self) -> int:
        return self._queue.limit

    @property
    def unanswered(self) -> int:
        """Requests sent (or queued) on this connection whose answer has not come."""
        return len(self._pending)

    async def _send(self, text: str, *, wait: bool = True) -> None:
        if self.closed:
            raise ConnectionClosed(f"{self.name}: connection is closed")
        await self._queue.put(text, wait=wait)

    def _write_failed(self, exc: Exception) -> None:
        """The socket refused a write: nothing queued will go, no answer will come.

        The socket is closed too (1011), so the peer knows at once and reconnects, instead
        of talking on to a connection that no longer answers until a heartbeat notices."""
        self._closed_event.set()
        self._fail_pending(f"send failed: {exc}")
        if self._closer is None:
            self._closer = asyncio.get_running_loop().create_task(
                self.close(1011, "send failed", flush=False), name=f"{self.name}-close")

    def _frame_dropped(self, text: str, exc: Exception) -> None:
        """One frame could not be encoded, so was not sent (the connection is fine):
        the message it carried fails, and only that one. A request's caller gets the error
        at once; a peer waiting for the answer it carried gets an error answer instead."""
        try:
            frame = decode_frame(text)
        except MalformedFrame:
            return
        error = BcnError(ErrorCode.INTERNAL_ERROR, f"the frame could not be sent: {exc}")
        if isinstance(frame, Request):
            future = self._pending.pop(frame.id or "", None)
            if future is not None and not future.done():
                future.set_exception(error)
        elif isinstance(frame, Response) and frame.ok:
            self._queue.put_nowait(encode_error(frame.id, error))

    def _fail_pending(self, why: str) -> None:
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(ConnectionClosed(f"{self.name}: {why}"))

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send a `req` and wait for its `res`; raise `BcnError` if the peer refused it."""
        return await (await self.send_request(method, params, timeout=timeout))

    async def send_request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None,
        wait: bool = True,
    ) -> asyncio.Future[dict[str, Any]]:
        """Queue a `req` and return the future of its answer, without waiting for it.

        For senders that must not hold up on the peer's answer (the hub fanning a message
        out to many bots, or pipelining deliveries): the `req` is queued, in order, when
        this returns. With no room in the send queue it waits for some — or, with
        `wait=False`, raises `SendQueueFull` at once. The future fails with `BcnError`
        (refused), `ConnectionClosed`, or `TimeoutError` once `timeout` (default
        `request_timeout`) passes without an answer.
        """
        req_id = new_request_id(self.name)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._pending[req_id] = future
        try:
            await self._send(encode_request(req_id, method, params or {}), wait=wait)
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
        self, name: str, payload: dict[str, Any], *, seq: int | None = None, wait: bool = True
    ) -> int:
        """Send an event stamped with this side's own `seq` counter; returns the seq used.

        `seq` overrides the counter: protocol v3 run events carry the run's own sequence
        number, and the outer frame's `seq` must equal it. `wait=False`: see `send_request`.
        """
        if seq is None:
            seq = next(self._seq)
        await self._send(encode_event(name, payload, seq), wait=wait)
        return seq

    def send_event_nowait(self, name: str, payload: dict[str, Any]) -> int:
        """Queue an event without waiting (for code that cannot await); returns its seq.

        Raises `SendQueueFull` when the send queue has no room, `ConnectionClosed` when
        the connection is closed.
        """
        seq = next(self._seq)
        if self.closed:
            raise ConnectionClosed(f"{self.name}: connection is closed")
        self._queue.put_nowait(encode_event(name, payload, seq))
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
            async with asyncio.timeout(timeout):
                await waiter
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
                    if msg.type is aiohttp.WSMsgType.CLOSE:
                        self.close_code = msg.data if isinstance(msg.data, int) else None
                        self.close_reason = msg.extra if isinstance(msg.extra, str) else ""
                    break
                else:
                    await self._control(msg)
        finally:
            self._closed_event.set()
            self._queue.close()
            self._fail_pending("connection closed")

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
            if self._slots is not None:
                await self._slots.acquire()  # at the bound, stop reading until one is done
            task = asyncio.create_task(self._answer(frame))
            self._handlers.add(task)
            task.add_done_callback(self._handler_done)
        elif self.on_event is not None:
            try:
                await self.on_event(frame)
            except Exception:
                log.exception("%s: event handler failed for %s", self.name, frame.event)

    def _handler_done(self, task: asyncio.Task[None]) -> None:
        self._handlers.discard(task)
        if self._slots is not None:
            self._slots.release()

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

    async def close(
        self, code: int = 1000, message: str = "", *, flush: bool = True,
        timeout: float = CLOSE_TIMEOUT,
    ) -> None:
        """Close the socket with `code` and `message`; safe to call twice.

        With `flush` (an orderly close) what is queued goes out first, for up to `timeout`
        seconds; without it (cutting off a peer that is too slow) it is dropped and the
        requests waiting for answers fail at once. Either way the close handshake gets
        `timeout` seconds, then the transport (when the connection was given it) is cut:
        a peer that does not read cannot hold the socket open.
        """
        self._closing = True
        if flush:
            try:
                async with asyncio.timeout(timeout):
                    await self._queue.flushed()
            except TimeoutError:
                log.info("%s: closing with %d characters still unsent", self.name,
                         self._queue.size)
        dropped = self._queue.close()
        if not flush:
            if dropped:
                log.info("%s: dropped %d unsent frame(s) on close", self.name, dropped)
            self._fail_pending(f"closed: {message or code}")
        try:
            if not self.ws.closed:
                async with asyncio.timeout(timeout):
                    await self.ws.close(code=code, message=message.encode())
        except TimeoutError:
            log.info("%s: the peer did not complete the close in %.0fs", self.name, timeout)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # our own cancellation; else aiohttp's shared drain future was
        finally:
            self._cut()
            self._closed_event.set()

    def _cut(self) -> None:
        """Abort a transport still holding unsent data: closing it only waits — for ever, for
        a peer that does not read — to send that first."""
        transport = self._transport
        if transport is not None and transport.get_write_buffer_size():
            log.info("%s: connection cut, the peer not reading what was sent", self.name)
            transport.abort()

    async def wait_closed(self) -> None:
        await self._closed_event.wait()
