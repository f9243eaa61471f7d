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
from collections import deque
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


DEFAULT_SEND_QUEUE_CHARS = 4 * 1024 * 1024
"""Unsent characters a connection holds by default (the hub passes its own, `hub:`)."""
CLOSE_TIMEOUT = 5.0
"""How long `close()` waits for queued frames to go out and for the peer's close frame."""


class SendQueueFull(Exception):
    """A send that must not wait found no room: the peer is not reading fast enough.

    Not a `ConnectionClosed`: the connection is fine, only behind, and callers decide what
    that means (the hub sheds an observer's `chat.inject`, fails a `chat.send` visibly).
    """


class SendQueue:
    """Frames a `Connection` accepted and has not handed to its socket yet, in order.

    One writer task writes them, so the socket sees them in the order they were queued and
    aiohttp's drain (every 256 KiB, when the transport is paused) holds the writer — not
    every sender — while the peer is slow. At most `limit` characters wait, with one
    exception: a sender that cannot wait (`wait=False`) may take it up to twice `limit`
    while the writer is not held up, since what was queued since the writer's last turn
    goes out at its next one — a burst to a peer that reads fine is not a slow peer. A
    frame larger than `limit` may go when nothing else waits (else it could never go).
    Senders that wait for room are served first come, first served: a later frame never
    overtakes a waiting one (a run's events must follow the ACK that names the run).
    On a socket with `try_send` (the in-process pair of `bridge.bcn.memory`), a frame with
    nothing queued or being written before it goes to the socket at once, not via the task.

    A frame that cannot be encoded (a lone surrogate — docs/text.md, "Valid Unicode") fails
    alone: aiohttp encodes a frame before it writes a byte of it, so the stream is intact;
    the frame is logged once, handed to `on_dropped`, and the writer goes on to the next.
    Any other failure ends the writer, and `on_failure` then closes the connection (the
    peer reconnects): never a writer gone while its socket stays open.
    """

    def __init__(self, ws: WebSocketLike, limit: int, name: str,
                 on_failure: Callable[[Exception], None],
                 on_dropped: Callable[[str, Exception], None] | None = None) -> None:
        self._ws = ws
        self._try_send: Callable[[str], bool] | None = getattr(ws, "try_send", None)
        """A socket that can take a frame without waiting (the in-process pair)."""
        self.limit = limit
        self._name = name
        self._on_failure = on_failure
        self._on_dropped = on_dropped
        self.dropped = 0
        """Frames that could not be encoded, dropped one by one (see the class's doc)."""
        self._frames: deque[str] = deque()
        self.size = 0
        """Characters queued now, the frame being written included."""
        self.peak = 0
        """The most characters ever queued at once."""
        self.closed = False
        self.held_up = False
        """True while the writer waits for the socket to drain: the peer is behind."""
        self._waiting = 0
        self._turns = asyncio.Lock()
        self._room = asyncio.Event()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._writer: asyncio.Task[None] | None = None

    def _fits(self, size: int, *, can_wait: bool) -> bool:
        after = self.size + size
        return (self.size == 0 or after <= self.limit
                or (not can_wait and not self.held_up and after <= 2 * self.limit))

    def put_nowait(self, text: str) -> None:
        """Queue one frame now, or raise `SendQueueFull` (or `ConnectionClosed`)."""
        size = len(text)
        if self.closed:
            raise ConnectionClosed(f"{self._name}: connection is closed")
        if self._waiting or not self._fits(size, can_wait=False):
            raise SendQueueFull(f"{self._name}: {self.size} characters are waiting to be sent")
        self._append(text, size)

    async def put(self, text: str, *, wait: bool = True) -> None:
        """Queue one frame; waits for room, or raises `SendQueueFull` when `wait` is False."""
        size = len(text)
        if self.closed:
            raise ConnectionClosed(f"{self._name}: connection is closed")
        if not self._waiting and self._fits(size, can_wait=wait):
            self._append(text, size)
            return
        if not wait:
            raise SendQueueFull(f"{self._name}: {self.size} characters are waiting to be sent")
        self._waiting += 1
        try:
            async with self._turns:  # first come, first served
                while not self.closed and not self._fits(size, can_wait=True):
                    self._room.clear()
                    await self._room.wait()
                if self.closed:
                    raise ConnectionClosed(f"{self._name}: closed while waiting to send")
                self._append(text, size)
        finally:
            self._waiting -= 1

    def _append(self, text: str, size: int) -> None:
        if (self._try_send is not None and self._idle.is_set() and not self.closed
                and self._try_send(text)):
            return  # nothing queued or being written: straight to the socket, in order
        self._frames.append(text)
        self.size += size
        if self.size > self.peak:
            self.peak = self.size
        self._idle.clear()
        if self._writer is None:
            self._writer = asyncio.create_task(self._write(), name=f"{self._name}-writer")
        else:
            self._wake.set()

    async def _write(self) -> None:
        frames = self._frames
        try:
            while True:
                while frames:
                    text = frames.popleft()
                    self.held_up = True  # seen by others only if the send waits (drain)
                    try:
                        await self._ws.send_str(text)
                    except UnicodeEncodeError as exc:  # refused before any of it was written
                        self._drop(text, exc)
                    finally:
                        self.held_up = False
                        self.size -= len(text)
                    self._room.set()
                self._idle.set()
                if self.closed:
                    return
                self._wake.clear()
                await self._wake.wait()
        except (ConnectionError, RuntimeError) as exc:
            log.debug("%s: send failed: %s", self._name, exc)
            self._fail(exc)
        except Exception as exc:
            log.exception("%s: the writer failed", self._name)
            self._fail(exc)

    def _drop(self, text: str, exc: Exception) -> None:
        self.dropped += 1
        log.warning("%s: a frame of %d characters could not be sent and is dropped: %s",
                    self._name, len(text), exc)
        if self._on_dropped is not None:
            try:
                self._on_dropped(text, exc)
            except Exception:
                log.exception("%s: failing the dropped frame's message failed", self._name)

    def _fail(self, exc: Exception) -> None:
        self.close()
        self._on_failure(exc)

    async def flushed(self) -> None:
        """Return once everything queued has been handed to the socket."""
        await self._idle.wait()

    def close(self) -> int:
        """Refuse new frames and drop the queued ones; returns how many were dropped.

        The writer finishes the frame it is writing and ends. It is not cancelled: it may be
        waiting for the socket to drain on a future aiohttp shares with `ws.close()`, and
        cancelling it would cancel the close handshake too.
        """
        self.closed = True
        dropped = len(self._frames)
        self.size -= sum(len(text) for text in self._frames)
        self._frames.clear()
        self._room.set()  # waiting senders wake up to ConnectionClosed
        self._wake.set()
        if self._writer is None or self.size == 0:
            self._idle.set()
        return dropped


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
                await asyncio.wait_for(self._queue.flushed(), timeout)
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
                await asyncio.wait_for(self.ws.close(code=code, message=message.encode()),
                                       timeout)
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

    async def drain_handlers(self) -> None:
        """Wait for request handlers still running (used on orderly shutdown)."""
        if self._handlers:
            await asyncio.gather(*self._handlers, return_exceptions=True)
