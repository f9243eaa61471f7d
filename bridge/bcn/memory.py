"""An in-process WebSocket pair, for the channel link between a bridge and its embedded hub.

Both ends run on one event loop in one process, so a real socket there costs a WebSocket
frame, a system call and a trip through aiohttp's reader on each side for every frame —
about a fifth of the relay's CPU per round trip. `memory_pair()` returns two `MemorySocket`s
that offer what `Connection` uses of a WebSocket (`send_str`, `receive`, `close`, `closed`),
so everything above the socket is the code a remote hub runs: frames are still encoded and
decoded, requests still answered and acked, the send queue still bounds what waits. What a
socket would add is kept where it matters:

- backpressure: a send waits while the peer holds `limit` characters it has not read (what
  a socket buffer and aiohttp's drain do), so a peer that stops reading holds the sender up
  instead of growing memory;
- close: `close()` hands the peer a CLOSE message (code and reason) after everything sent
  before it; after that neither end can send (ConnectionResetError, as aiohttp raises), and
  each end's reader ends with CLOSE (the peer) or CLOSED (the end that closed).
"""

from __future__ import annotations

import asyncio
from collections import deque

import aiohttp

DEFAULT_LIMIT_CHARS = 256 * 1024
"""Unread characters one end may hold before its peer's sends wait (aiohttp drains at 256 KiB)."""

_CLOSED = aiohttp.WSMessage(aiohttp.WSMsgType.CLOSED, None, None)


class MemorySocket:
    """One end of a `memory_pair()`."""

    def __init__(self, limit: int = DEFAULT_LIMIT_CHARS) -> None:
        self.limit = limit
        self.peer: MemorySocket | None = None
        self._inbox: deque[aiohttp.WSMessage] = deque()
        self._unread = 0
        """Characters of text messages in `_inbox`."""
        self._reader: asyncio.Future[None] | None = None
        """The reader waiting for something to arrive (a future, not an Event: one per frame)."""
        self._read = asyncio.Event()
        """Set whenever this end read something (or the pair closed): waiting senders look."""
        self._senders = 0
        """Sends waiting for this end to read (the only ones `_read` needs to wake)."""
        self._closed = False
        """No more sends from this end (it closed, or its peer's close reached it)."""
        self._ended = False
        """Nothing more will arrive: the reader gets CLOSED once the inbox is empty."""

    @property
    def closed(self) -> bool:
        return self._closed

    async def send_str(self, data: str, compress: int | None = None) -> None:
        peer = self.peer
        while True:
            if self._closed or peer is None or peer._ended:
                raise ConnectionResetError("Cannot write to closing transport")
            if peer._unread < self.limit:
                break
            peer._read.clear()
            peer._senders += 1
            try:
                await peer._read.wait()
            finally:
                peer._senders -= 1
        peer._take(data)

    def try_send(self, data: str) -> bool:
        """Hand `data` to the peer now if that needs no wait; False (nothing sent) if it
        would wait for the peer to read, or fail. `SendQueue` uses it to skip its writer
        task — one wake-up of the loop per frame — whenever nothing is queued before it."""
        peer = self.peer
        if self._closed or peer is None or peer._ended or peer._unread >= self.limit:
            return False
        peer._take(data)
        return True

    def _take(self, data: str) -> None:
        self._unread += len(data)
        self._put(aiohttp.WSMessage(aiohttp.WSMsgType.TEXT, data, None))

    def _put(self, message: aiohttp.WSMessage) -> None:
        self._inbox.append(message)
        self._wake_reader()

    def _wake_reader(self) -> None:
        reader = self._reader
        if reader is not None and not reader.done():
            reader.set_result(None)

    async def receive(self, timeout: float | None = None) -> aiohttp.WSMessage:
        if not self._inbox:
            if timeout is None:  # the read loop's case: no timer per frame
                await self._wait()
            else:
                async with asyncio.timeout(timeout):
                    await self._wait()
            if not self._inbox:
                return _CLOSED
        message = self._inbox.popleft()
        if message.type is aiohttp.WSMsgType.TEXT:
            self._unread -= len(message.data)
            if self._senders:
                self._read.set()
        elif message.type is aiohttp.WSMsgType.CLOSE:
            # The peer closed: like aiohttp's autoclose, this end answers and is done too.
            self._closed = self._ended = True
            self._read.set()
        return message

    async def _wait(self) -> None:
        """Until something arrived, or nothing more will."""
        while not self._inbox and not self._ended:
            self._reader = asyncio.get_running_loop().create_future()
            try:
                await self._reader
            finally:
                self._reader = None

    async def close(self, *, code: int = 1000, message: bytes = b"") -> bool:
        """Close both directions; False when this end was closed already."""
        if self._closed:
            return False
        self._closed = self._ended = True
        self._wake_reader()
        self._read.set()
        peer = self.peer
        if peer is not None and not peer._ended:
            peer._put(aiohttp.WSMessage(aiohttp.WSMsgType.CLOSE, code,
                                        message.decode("utf-8", "replace")))
            peer._ended = True
            peer._read.set()
        return True


def memory_pair(limit: int = DEFAULT_LIMIT_CHARS) -> tuple[MemorySocket, MemorySocket]:
    """Two connected ends: what one sends, the other receives, in order."""
    one, other = MemorySocket(limit), MemorySocket(limit)
    one.peer, other.peer = other, one
    return one, other
