"""Frames for pages, written when the event loop's turn ends instead of one system call at a
time in the middle of it.

A turn of the loop often produces frames for several pages: the acks of the messages that
arrived together, the bots' replies that came back together. Written as each is made, every
frame is a `send` in between the Python work, and on a local socket every `send` to a page
that went back to waiting wakes it again (on loopback the sender pays for that wake-up);
written together at the end of the turn, the first wakes the reader and the rest find it
awake, and the kernel's network path runs once per burst instead of between every bit of
Python. `bench/relay.py --code` measured the relay's CPU per round trip at 50 conversations
0.83-0.93x of writing each frame at once, though it executes 2% more instructions
(docs/performance.md, stop 29). The same idea as write coalescing in other network servers:
queue during the turn, flush once.

What may not wait is still bounded: a page's frames go out in order, a write happens at once
only when the page's socket buffer has room for it (so it cannot block), and a page that
stops reading gets `send_timeout` to take what waits for it, and at most `max_backlog`
characters of it, before it is cut off (it reloads from the room's history, as any page that
lost its connection does).

A frame that cannot be encoded (a lone surrogate; docs/text.md, "Valid Unicode") fails
alone: aiohttp encodes a frame before it writes a byte of it, so the page's stream is
intact; the frame is logged once and the next goes out. Cutting the page off for it would
only bring it back to the same frame, in the history, for ever. Any other surprise from a
write cuts the page off, and it reloads.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable
from typing import Protocol

log = logging.getLogger(__name__)

SEND_TIMEOUT = 10.0
"""Longest wait for a page to take its frames. A tab that stops reading (a suspended laptop,
a hostile client) is cut off then: its frames would otherwise pile up in memory."""

SURE_TO_FIT = 16 * 1024
"""Bytes a page's socket buffer may hold, with the new frame, for a write made at once: well
under the transport's high-water mark (64 KiB), so the write cannot wait for the page."""

MAX_BACKLOG_CHARS = 4 * 1024 * 1024
"""Characters that may wait for one page: a few of the largest replies. More means the page
is not reading, and it is cut off rather than hold the server's memory."""


class PageSocket(Protocol):
    @property
    def closed(self) -> bool: ...

    def send_str(self, data: str) -> Awaitable[None]: ...


class PageTransport(Protocol):
    def abort(self) -> None: ...

    def get_write_buffer_size(self) -> int: ...


class EndOfTurn:
    """Writers with frames waiting, written in one callback when the loop's turn ends."""

    def __init__(self) -> None:
        self._due: list[PageWriter] = []

    def add(self, writer: PageWriter) -> None:
        if not self._due:
            asyncio.get_running_loop().call_soon(self.write_all)
        self._due.append(writer)

    def write_all(self) -> None:
        due, self._due = self._due, []
        for writer in due:
            try:
                writer.write_ready()
            except Exception:
                # One page's surprise must not strand the frames of the pages after it.
                log.exception("webchat: writing to %s failed", writer.name)
                writer.cut_off("a write failed")


class PageWriter:
    """The frames on their way to one page, in order."""

    def __init__(self, ws: PageSocket, transport: PageTransport | None, turn: EndOfTurn, *,
                 name: str = "a page", send_timeout: float = SEND_TIMEOUT,
                 max_backlog: int = MAX_BACKLOG_CHARS) -> None:
        self.ws = ws
        self.transport = transport
        self.turn = turn
        self.name = name
        self.send_timeout = send_timeout
        self.max_backlog = max_backlog
        self._backlog: deque[str] = deque()
        self._backlog_chars = 0
        self._gone = False
        """Cut off, or its socket failed: nothing more is queued for it."""
        self._draining: asyncio.Task[None] | None = None
        """Writes the backlog while the page is slow to read: the frame at its head would
        have to wait for the page, which the end-of-turn callback cannot do."""

    def send(self, data: str) -> None:
        """Queue one frame; it goes out at the end of this turn, or once the page reads."""
        if self._gone or self.ws.closed:
            return
        if self._backlog_chars + len(data) > self.max_backlog and self._backlog:
            self.cut_off(f"{self._backlog_chars} characters are waiting for it")
            return
        if not self._backlog and self._draining is None:
            self.turn.add(self)
        self._backlog.append(data)
        self._backlog_chars += len(data)

    def write_ready(self) -> None:
        """Write what can go out without waiting; hand the rest to a task that may wait."""
        backlog = self._backlog
        while backlog and self._draining is None:
            if self.ws.closed:
                self._forget()
                return
            data = backlog[0]
            if not self._fits(data):
                self._draining = asyncio.get_running_loop().create_task(self._drain())
                return
            self._written(data)
            self._write_now(data)

    def _fits(self, data: str) -> bool:
        transport = self.transport
        # Up to 4 bytes a character in UTF-8.
        return (transport is not None
                and transport.get_write_buffer_size() + 4 * len(data) < SURE_TO_FIT)

    def _write_now(self, data: str) -> None:
        """Write a frame that fits the socket buffer: aiohttp's send returns without waiting
        then, so its coroutine is run to its end right here, with no task for it."""
        sending = self.ws.send_str(data).__await__()
        try:
            sending.send(None)
        except StopIteration:
            return
        except (ConnectionError, RuntimeError) as exc:
            self._left(exc)
            return
        except UnicodeEncodeError as exc:  # refused before any of it was written
            self._refused(data, exc)
            return
        # It waited after all (it cannot while the buffer has room): a frame half-written
        # is a broken stream, so the page goes, and comes back to the room's history.
        sending.close()
        self.cut_off("a write that could not wait did")

    async def _drain(self) -> None:
        """Write the backlog in order, waiting for the page as long as `send_timeout` each."""
        try:
            while self._backlog and not self.ws.closed:
                data = self._backlog[0]
                if self._fits(data):
                    self._draining = None
                    self.write_ready()  # the page caught up: the rest needs no task
                    return
                try:
                    async with asyncio.timeout(self.send_timeout):
                        await self.ws.send_str(data)
                except UnicodeEncodeError as exc:  # refused before any of it was written
                    self._refused(data, exc)
                self._written(data)
        except TimeoutError:
            self.cut_off(f"it took no frame for {self.send_timeout:g} s")
        except (ConnectionError, RuntimeError) as exc:
            self._left(exc)
        finally:
            if self._draining is asyncio.current_task():
                self._draining = None
            if self.ws.closed:
                self._forget()

    def _written(self, data: str) -> None:
        """The frame at the head of the backlog went to the socket."""
        self._backlog.popleft()
        self._backlog_chars -= len(data)

    def _refused(self, data: str, exc: Exception) -> None:
        """This one frame cannot be encoded (the page's connection is fine): it is dropped."""
        log.warning("webchat: a frame of %d characters for %s could not be sent and is "
                    "dropped: %s", len(data), self.name, exc)

    def _left(self, exc: Exception) -> None:
        """The page's socket failed (it closed): nothing more goes to it."""
        log.debug("webchat: %s left before a frame reached it: %s", self.name, exc)
        self._forget(gone=True)

    def cut_off(self, why: str) -> None:
        """Drop the page's connection: it stopped reading."""
        log.info("webchat: %s stopped reading (%s); disconnecting it", self.name, why)
        self._forget(gone=True)
        if self.transport is not None:
            self.transport.abort()

    def _forget(self, *, gone: bool = False) -> None:
        self._gone = self._gone or gone
        self._backlog.clear()
        self._backlog_chars = 0
