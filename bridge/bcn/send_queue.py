"""The frames one BCN connection accepted and has not handed to its socket yet.

Split from `bridge.bcn.connection` (which correlates requests, answers and events): this is
only the bounded, ordered queue in front of a socket and its one writer task — the part that
decides what a slow peer costs (docs/hub.md, "Backpressure") and that one unsendable frame
fails alone (docs/text.md, "Valid Unicode").
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Protocol

import aiohttp

from bridge.bcn.errors import ConnectionClosed

log = logging.getLogger(__name__)


class WebSocketLike(Protocol):
    """What both aiohttp's client and server WebSocket objects offer."""

    @property
    def closed(self) -> bool: ...

    async def send_str(self, data: str, compress: int | None = None) -> None: ...

    async def receive(self, timeout: float | None = None) -> aiohttp.WSMessage: ...

    async def close(self, *, code: int = ..., message: bytes = ...) -> bool: ...


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
