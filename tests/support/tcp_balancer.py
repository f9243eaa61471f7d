"""A TCP load balancer in front of several bridge instances, as an operator runs one.

Round robin per connection; a backend that refuses the connection (a killed instance) is
skipped for the next, as a balancer with health checks would. Bytes are copied both ways
untouched, so the homeserver's HTTP keep-alive connections stick to one instance until it
dies, and its retries on a new connection reach another.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools


class TcpBalancer:
    def __init__(self, port: int, backends: list[int], host: str = "127.0.0.1") -> None:
        self.host, self.port = host, port
        self.backends = backends
        self.connections: dict[int, int] = dict.fromkeys(backends, 0)
        """Backend port → connections handed to it (what a test prints, never asserts)."""
        self._turn = itertools.cycle(range(len(backends)))
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> TcpBalancer:
        self._server = await asyncio.start_server(self._serve, self.host, self.port,
                                                  reuse_address=True)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
        for pipe in list(self._pipes):
            pipe.cancel()
        for pipe in list(self._pipes):
            with contextlib.suppress(BaseException):
                await pipe
        if self._server is not None:
            await self._server.wait_closed()

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        for _ in self.backends:
            port = self.backends[next(self._turn)]
            try:
                streams = await asyncio.open_connection(self.host, port)
            except OSError:
                continue  # down: the next one
            self.connections[port] += 1
            return streams
        return None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        backend = await self._connect()
        if backend is None:
            writer.close()
            return
        back_reader, back_writer = backend
        pipes = [asyncio.create_task(_copy(reader, back_writer)),
                 asyncio.create_task(_copy(back_reader, writer))]
        self._pipes.update(pipes)
        try:
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pipe in pipes:
                pipe.cancel()
                self._pipes.discard(pipe)
            for stream in (writer, back_writer):
                stream.close()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, asyncio.IncompleteReadError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
