"""A TCP proxy on 127.0.0.1 that a test can cut, block and re-point.

Stands between a bot and the hub, so a test can drop the bot's connection the way a
network does (both sides see the socket end), keep it from reconnecting for a while, and
send it to a restarted hub on another port without the bot knowing.
"""

from __future__ import annotations

import asyncio
import contextlib


class CuttableProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.blocked = False
        """While set, new connections are accepted and closed at once (the hub is 'gone')."""
        self.accepted = 0
        self._server: asyncio.Server | None = None
        self._pairs: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.blocked:
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self.accepted += 1
        task = asyncio.current_task()
        assert task is not None
        self._pairs.add(task)
        try:
            await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
        except asyncio.CancelledError:
            pass
        finally:
            for end in (writer, up_writer):
                end.close()
            self._pairs.discard(task)

    async def cut(self) -> None:
        """Drop every connection now going through the proxy."""
        for task in list(self._pairs):
            task.cancel()
        await asyncio.gather(*self._pairs, return_exceptions=True)

    async def stop(self) -> None:
        await self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    sink.close()
