"""The bridge's side of the BCN channel link (docs/hub.md).

Keeps one `/ws/channel` connection up: connects with the configured bindings, heartbeats,
reconnects with backoff, and hands every `channel.deliver` to the outbound pipeline, acking
only once that pipeline has durably queued the output. Requests made while the link is down
wait for the next connection instead of failing, so a hub restart delays messages rather
than losing them (`msg_id` idempotency makes the retry safe).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from bridge.background import Background
from bridge.bcn import BcnError, Connection, ConnectionClosed, ErrorCode, Event, Request
from bridge.bcn.connection import WebSocketLike
from bridge.bcn.limits import MAX_FRAME_BYTES
from bridge.core.binding import Binding
from bridge.retry import Backoff

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1

DeliverHandler = Callable[[dict[str, Any]], Awaitable[None]]
EventCallback = Callable[[str, dict[str, Any]], Awaitable[None]]


def channel_url(url: str) -> str:
    """Accept a BCN base URL (`ws://host:port`) or the full `/ws/channel` endpoint."""
    url = url.rstrip("/")
    return url if url.endswith("/ws/channel") else f"{url}/ws/channel"


def conversation_id(binding: Binding) -> str:
    """The link's `conversation_id` for a binding: the chat, plus the thread when pinned."""
    return binding.chat if binding.thread is None else f"{binding.chat}#{binding.thread}"


def wire_binding(binding: Binding) -> dict[str, Any]:
    return {
        "channel_type": binding.channel_type,
        "account_ref": binding.account,
        "conversation_id": conversation_id(binding),
        "group_id": binding.group,
        "session_scope": binding.session_scope,
        "identity_forwarding": binding.identity_forwarding,
        "outbound_visibility": "full_transcript",
    }


@dataclass(slots=True)
class LinkSettings:
    url: str
    token: str
    link_name: str = "bcn-bridge"
    heartbeat_interval: float = 30.0
    request_timeout: float = 15.0
    connect_timeout: float = 10.0
    wait_for_link: float = 120.0
    """How long a request waits for the link to come back before giving up."""
    open_socket: Callable[[], Awaitable[WebSocketLike]] | None = None
    """Opens the link's socket instead of a WebSocket to `url`: the embedded hub's
    in-process socket (`Hub.open_link`). Everything above the socket is the same."""


class LinkClient:
    def __init__(
        self,
        settings: LinkSettings,
        bindings: list[Binding],
        *,
        on_deliver: DeliverHandler,
        on_event: EventCallback | None = None,
        on_connected: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.settings = settings
        self.bindings = bindings
        self.on_deliver = on_deliver
        self.on_event = on_event
        self.on_connected = on_connected
        self.binding_ids: dict[int, str] = {}
        """id(binding) → the hub's binding_id, filled on every connect."""
        self.bindings_by_id: dict[str, Binding] = {}
        self._conn: Connection | None = None
        self._ready = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None
        self.connects = 0
        self._background = Background("link")

    # ------------------------------------------------------------------ lifecycle
    async def start(self, *, wait: bool = True) -> None:
        self._session = aiohttp.ClientSession()
        self._task = asyncio.create_task(self._run(), name="bcn-link")
        if wait:
            await self.wait_ready()

    async def wait_ready(self, timeout: float | None = None) -> None:
        async with asyncio.timeout(timeout or self.settings.wait_for_link):
            await self._ready.wait()

    @property
    def connected(self) -> bool:
        return self._ready.is_set()

    async def stop(self) -> None:
        self._stopping = True
        if self._conn is not None:
            await self._conn.close()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._background.cancel_all()
        if self._session is not None:
            await self._session.close()

    async def drop(self) -> None:
        """Close the current connection (it will reconnect); used by tests and on stalls."""
        if self._conn is not None:
            await self._conn.close()

    async def _run(self) -> None:
        backoff = Backoff(initial=0.2, maximum=15.0)
        url = channel_url(self.settings.url)
        while not self._stopping:
            try:
                await self._connect_once(url, backoff)
            except asyncio.CancelledError:
                raise
            except BcnError as exc:
                if exc.code == ErrorCode.UNAUTHORIZED:
                    log.error("BCN link refused: %s (check bcn.token)", exc.message)
                else:
                    log.warning("BCN link: %s", exc)
            except (aiohttp.ClientError, OSError, ConnectionClosed, TimeoutError) as exc:
                log.warning("BCN link to %s unavailable: %s", url, exc or type(exc).__name__)
            except Exception:
                log.exception("BCN link failed")
            self._ready.clear()
            self._conn = None
            if self._stopping:
                break
            delay = backoff.next_delay()
            log.info("BCN link: reconnecting in %.1fs", delay)
            await asyncio.sleep(delay)

    async def _connect_once(self, url: str, backoff: Backoff) -> None:
        assert self._session is not None
        if self.settings.open_socket is not None:
            socket = await self.settings.open_socket()
            try:
                await self._serve(socket, backoff)
            finally:
                await socket.close()
            return
        async with self._session.ws_connect(
            url, timeout=aiohttp.ClientWSTimeout(ws_close=5.0), heartbeat=None,
            max_msg_size=MAX_FRAME_BYTES,
        ) as ws:
            await self._serve(ws, backoff)

    async def _serve(self, ws: WebSocketLike, backoff: Backoff) -> None:
        """Handshake on a fresh socket, then serve it until it closes."""
        conn = Connection(
            ws, on_request=self._on_request, on_event=self._on_event, name="link",
            request_timeout=self.settings.request_timeout,
        )
        reader = asyncio.create_task(conn.run())
        try:
            payload = await conn.request(
                "channel.connect",
                {
                    "token": self.settings.token,
                    "protocol_version": PROTOCOL_VERSION,
                    "link_name": self.settings.link_name,
                    "bindings": [wire_binding(b) for b in self.bindings],
                },
                timeout=self.settings.connect_timeout,
            )
            self._adopt_bindings(payload.get("bindings") or [])
            self._conn = conn
            self.connects += 1
            backoff.reset()
            log.info(
                "BCN link up (%s, %d binding(s), %d pending deliveries)",
                payload.get("link_id", "?"), len(self.bindings_by_id),
                payload.get("pending_deliveries", 0),
            )
            self._ready.set()
            if self.on_connected is not None:
                self._background.spawn(self.on_connected())
            heartbeat = asyncio.create_task(self._heartbeat(conn))
            try:
                await reader
            finally:
                heartbeat.cancel()
        finally:
            self._ready.clear()
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
            log.info("BCN link down")

    def _adopt_bindings(self, echoed: list[dict[str, Any]]) -> None:
        by_key = {
            (b.channel_type, b.account, conversation_id(b)): b for b in self.bindings
        }
        self.binding_ids.clear()
        self.bindings_by_id.clear()
        for item in echoed:
            key = (item.get("channel_type"), item.get("account_ref"), item.get("conversation_id"))
            binding = by_key.get(key)  # type: ignore[arg-type]
            binding_id = item.get("binding_id")
            if binding is not None and isinstance(binding_id, str):
                self.binding_ids[id(binding)] = binding_id
                self.bindings_by_id[binding_id] = binding

    async def _heartbeat(self, conn: Connection) -> None:
        while True:
            await asyncio.sleep(self.settings.heartbeat_interval)
            try:
                await conn.request("channel.status", {})
            except (BcnError, ConnectionClosed, TimeoutError) as exc:
                log.warning("BCN link heartbeat failed (%s); reconnecting", exc)
                await conn.close()
                return

    # ------------------------------------------------------------------ incoming
    async def _on_request(self, req: Request) -> dict[str, Any]:
        if req.method != "channel.deliver":
            raise BcnError(ErrorCode.UNKNOWN_METHOD, f"unknown method {req.method!r}")
        try:
            await self.on_deliver(req.params)
        except BcnError:
            raise
        except Exception as exc:
            log.exception("could not queue a delivery; the BCN will retry it")
            raise BcnError(ErrorCode.UNAVAILABLE, f"not queued: {exc}", retryable=True,
                           retry_after_ms=1000) from exc
        return {}

    async def _on_event(self, event: Event) -> None:
        if self.on_event is not None:
            # Never block the read loop on a callback that may itself call the hub.
            self._background.spawn(self.on_event(event.event, event.payload))

    # ------------------------------------------------------------------ requests
    async def request(
        self, method: str, params: dict[str, Any], *, wait_for_link: float | None = None
    ) -> dict[str, Any]:
        """Send a request, waiting out a dropped link for up to `wait_for_link` seconds
        (`bcn.wait_for_link` by default; 0 = only if the link is up now)."""
        loop = asyncio.get_running_loop()
        limit = self.settings.wait_for_link if wait_for_link is None else wait_for_link
        deadline = loop.time() + limit
        while True:
            conn = self._conn if self._ready.is_set() else None
            if conn is None:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise ConnectionClosed("the BCN link is down")
                try:
                    async with asyncio.timeout(remaining):
                        await self._ready.wait()
                except TimeoutError:
                    raise ConnectionClosed("the BCN link stayed down too long") from None
                continue
            try:
                return await conn.request(method, params)
            except ConnectionClosed:
                if loop.time() >= deadline:
                    raise
                log.info("BCN link dropped during %s; retrying after reconnect", method)
                await asyncio.sleep(0.05)
            except BcnError as exc:
                if exc.retryable and loop.time() < deadline:
                    await asyncio.sleep((exc.retry_after_ms or 500) / 1000)
                    continue
                raise

    def binding_id(self, binding: Binding) -> str | None:
        return self.binding_ids.get(id(binding))
