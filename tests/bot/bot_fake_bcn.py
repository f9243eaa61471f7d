"""A scripted BCN for SDK tests: a real aiohttp WebSocket server on 127.0.0.1, port 0.

It speaks BCN's `/ws/bot` frames through the shared `Connection` (the same wire
layer the hub uses), records every frame a bot sends in arrival order, and lets a test
send requests to the bot, drop the socket, or refuse the handshake.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from functools import partial
from typing import Any

from aiohttp import web

from bridge.bcn import BcnError, Connection, ErrorCode, Request
from tests.support.socket_tap import TappedSocket


class FakeBcn:
    def __init__(
        self,
        *,
        env: dict[str, str] | None = None,
        deprecation: dict[str, str] | None = None,
        refuse_with: BcnError | None = None,
        run_events: bool = False,
    ) -> None:
        self.env = env or {}
        self.deprecation = deprecation
        self.refuse_with = refuse_with
        self.run_events = run_events
        """Answer a v3 connect with the unified run event capabilities (a current BCN)."""
        self.refusals_left = -1
        """How many handshakes to refuse with `refuse_with` before accepting (-1: all)."""
        self.known_tokens: dict[str, str] = {}
        self.frames: list[dict[str, Any]] = []
        self.connect_params: list[dict[str, Any]] = []
        self.connection: Connection | None = None
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self, port: int = 0) -> str:
        app = web.Application()
        app.router.add_get("/ws/bot", self._serve)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"ws://127.0.0.1:{port}/ws/bot"
        return self.url

    async def stop(self) -> None:
        if self.connection is not None:
            await self.connection.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _serve(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        connection = Connection(TappedSocket(ws, incoming=self.frames.append), name="hub")
        connection.on_request = partial(self._on_request, connection)
        await connection.run()
        return ws

    async def _on_request(self, connection: Connection, request: Request) -> dict[str, Any]:
        if request.method == "bot.connect":
            self.connect_params.append(request.params)
            if self.refuse_with is not None and self.refusals_left != 0:
                self.refusals_left -= 1
                raise self.refuse_with
            token = request.params.get("token")
            is_new = token not in self.known_tokens
            if is_new:
                if token is not None:
                    raise BcnError(ErrorCode.UNAUTHORIZED, "unknown token")
                token = f"tok-{next(self._ids)}-secret"
                self.known_tokens[token] = f"bot-{len(self.known_tokens) + 1}"
            self.connection = connection
            payload: dict[str, Any] = {
                "is_new": is_new,
                "token": token,
                "bot_uuid": self.known_tokens[token],
                "protocol_version": request.params.get("protocol_version", 1),
                "min_supported_version": 1,
                "env": {**self.env, "BCN_BOT_TOKEN": token},
            }
            if self.deprecation is not None:
                payload["deprecation"] = self.deprecation
            if self.run_events and payload["protocol_version"] == 3:
                payload["capabilities"] = {"unified_run_events": True,
                                           "canonical_session_id": True,
                                           "tool_result_task_intent": False}
            return payload
        if request.method == "bot.status":
            return {}
        raise BcnError(ErrorCode.UNKNOWN_METHOD, request.method)

    # ------------------------------------------------------------------ test helpers
    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.connection is not None, "no bot is connected"
        return await self.connection.request(method, params, timeout=5)

    async def drop(self) -> None:
        """Close the bot's socket from the server side, as a crashing BCN would."""
        assert self.connection is not None
        connection, self.connection = self.connection, None
        await connection.close()

    def events(self, run_id: str) -> list[dict[str, Any]]:
        """The payloads of a run's events, in either wire form (`run_id` or v3 `runId`)."""
        return [
            frame["payload"]
            for frame in self.frames
            if frame.get("type") == "event"
            and run_id in (frame["payload"].get("run_id"), frame["payload"].get("runId"))
        ]

    def event_frames(self, run_id: str) -> list[dict[str, Any]]:
        return [frame for frame in self.frames if frame.get("type") == "event"
                and frame["payload"].get("runId") == run_id]

    def requests(self, method: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f.get("type") == "req" and f.get("method") == method]

    async def wait_until(self, condition: Callable[[], bool], timeout: float = 5.0) -> None:
        """Poll until `condition()` holds; fail the test if it never does.

        Polling, not an event: conditions also watch bot-side state and logs.
        """
        async with asyncio.timeout(timeout):
            while not condition():
                await asyncio.sleep(0.005)

    async def wait_terminal(self, run_id: str) -> dict[str, Any]:
        terminal = {"final", "error", "aborted"}
        await self.wait_until(lambda: any(e.get("state") in terminal for e in self.events(run_id)))
        return next(e for e in self.events(run_id) if e.get("state") in terminal)


def send_params(
    text: str,
    *,
    session_key: str = "grp-1:channel_webchat_0123abcd",
    group_id: str = "grp-1",
    **extra: Any,
) -> dict[str, Any]:
    """`chat.send` params as BCN's own example shapes them."""
    params: dict[str, Any] = {
        "session_key": session_key,
        "bcs_group_id": group_id,
        "bcs_session_id": session_key,
        "message": {"role": "user", "content": [{"type": "text", "text": text}],
                    "timestamp": 1710960000000},
        "channel": {"source": "webchat", "user_id": "u-1", "actor_name": "Alice",
                    "identity_forwarding": True},
        "session_context": {"session_id": group_id, "from": "Alice", "you_are_mentioned": True},
        "timeout_ms": 300000,
    }
    params.update(extra)
    return params
