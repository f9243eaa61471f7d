from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from webchat_clients import ChatClient, open_client

from adapters.webchat import WebchatAccountConfig, WebchatAdapter
from bridge.core.binding import Binding
from bridge.core.model import Inbound, Outbound
from bridge.web.server import WebServer

os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")


@dataclass
class RunningWebchat:
    """A running WebServer with one webchat account and a sink that queues every Inbound."""

    server: WebServer
    adapter: WebchatAdapter
    inbound: asyncio.Queue[Inbound] = field(default_factory=asyncio.Queue)

    @property
    def ws_url(self) -> str:
        return f"{self.server.url}{self.adapter.ws_path}"

    def binding(self, room: str = "lobby") -> Binding:
        return Binding(channel=self.adapter.channel, chat=room, group="demo")

    def outbound(self, text: str, *, room: str = "lobby", **fields: Any) -> Outbound:
        """What the core would hand the adapter: `text` already rendered for webchat."""
        fields.setdefault("sender_label", "Rules")
        return Outbound(binding=self.binding(room), conversation="c1", text=text, **fields)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
async def start_webchat() -> AsyncIterator[Callable[..., Any]]:
    """Start a WebServer on 127.0.0.1:0 with webchat accounts; everything stops afterwards."""
    servers: list[WebServer] = []
    adapters: list[WebchatAdapter] = []

    async def start(account: str = "main", **options: Any) -> RunningWebchat:
        server = WebServer("127.0.0.1:0")
        queue: asyncio.Queue[Inbound] = asyncio.Queue()

        async def sink(inbound: Inbound) -> None:
            await queue.put(inbound)

        adapter = WebchatAdapter(account, WebchatAccountConfig(**options), sink, web=server)
        await adapter.start()
        await server.start()
        servers.append(server)
        adapters.append(adapter)
        return RunningWebchat(server, adapter, queue)

    yield start
    for adapter in adapters:
        await adapter.stop()
    for server in servers:
        await server.stop()


@pytest.fixture
async def webchat(start_webchat: Callable[..., Any]) -> RunningWebchat:
    return await start_webchat()


@pytest.fixture
async def connect(
    http: aiohttp.ClientSession, webchat: RunningWebchat
) -> Callable[..., Any]:
    async def connect_client(client_id: str | None = None) -> ChatClient:
        return await open_client(http, webchat.ws_url, client_id)

    return connect_client
