"""Small raw-frame clients for the hub tests: a scriptable bot and a scriptable link.

Both speak through the shared `Connection`, so the tests exercise the real wire layer;
everything they receive lands in queues the tests read with a timeout.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from bridge.bcn import BcnError, Connection, Event, Request
from bridge.hub import Hub, HubConfig
from tests.support.socket_tap import TappedSocket

StartHub = Callable[..., Awaitable[Hub]]
"""The `start_hub` fixture: starts a hub on the test's data_dir with config overrides."""

WAIT = 3.0
"""Upper bound for anything a test waits for; a passing test never waits this long."""


async def next_item(queue: asyncio.Queue[Any], timeout: float = WAIT) -> Any:
    return await asyncio.wait_for(queue.get(), timeout)


async def until(condition: Callable[[], bool], timeout: float = WAIT) -> None:
    """Wait until `condition()` holds (polled); fails the test after `timeout`."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


async def nothing_in(queue: asyncio.Queue[Any], settle: float = 0.1) -> bool:
    """True when nothing arrives within `settle` seconds (for "X was not delivered")."""
    try:
        await asyncio.wait_for(queue.get(), settle)
    except TimeoutError:
        return True
    return False


def hub_config(tmp_path: Any, **overrides: Any) -> HubConfig:
    data: dict[str, Any] = {
        "listen": "127.0.0.1:0",
        "data_dir": str(tmp_path / "hub-data"),
        "link_tokens": ["link-secret-1"],
        "groups": [
            {"id": "grp", "name": "Ops", "driver": "Helper", "bots": ["Helper", "Mantis"],
             "auto_join": True},
        ],
        "handshake_timeout_seconds": 2,
        "request_timeout_seconds": 2,
        "abort_ack_wait_seconds": 0.5,
    }
    data.update(overrides)
    return HubConfig.model_validate(data)


class TestBot:
    """A bot that records what it is sent; `reply` (text -> text) makes it answer finals.

    It speaks whichever run events its connection negotiated: v3 `chat` / `agent` (with
    the run's session and its own per-run `seq`) or the v1/v2 `chat.event`.
    """

    __test__ = False

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.refusals: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        """Answers that name no request (`id: null`): how the hub refuses an event."""
        self.conn = Connection(TappedSocket(ws, incoming=self._tap), on_request=self._on_request,
                               name="test-bot")
        self.sends: asyncio.Queue[Request] = asyncio.Queue()
        self.injects: asyncio.Queue[Request] = asyncio.Queue()
        self.aborts: asyncio.Queue[Request] = asyncio.Queue()
        self.reply: Callable[[str], str | None] | None = None
        self.routing: dict[str, Any] | None = None
        self.ack_delay = 0.0
        self.refuse: BcnError | None = None
        """Answer every chat.send with this error instead of a run."""
        self.fixed_run_id: str | None = None
        """Acknowledge every chat.send with this run id (a bot that reuses ids)."""
        self.payload: dict[str, Any] = {}
        self.sessions: dict[str, str] = {}
        """run id → the session its chat.send named (what v3 events must echo)."""
        self._seqs: dict[str, itertools.count[int]] = {}
        self._runs = itertools.count(1)
        self._task = asyncio.create_task(self.conn.run())

    @classmethod
    async def open(cls, http: aiohttp.ClientSession, hub: Hub) -> TestBot:
        return cls(await http.ws_connect(hub.url + "/ws/bot"))

    @classmethod
    async def connect(cls, http: aiohttp.ClientSession, hub: Hub, **params: Any) -> TestBot:
        bot = await cls.open(http, hub)
        params.setdefault("protocol_version", 3)
        bot.payload = await bot.conn.request("bot.connect", params)
        return bot

    @property
    def uuid(self) -> str:
        return str(self.payload["bot_uuid"])

    def _tap(self, frame: dict[str, Any]) -> None:
        if frame.get("type") == "res" and frame.get("id") is None:
            self.refusals.put_nowait(frame["error"])

    @property
    def run_events(self) -> bool:
        """Whether the hub negotiated v3 run events with this bot."""
        return self.payload.get("capabilities", {}).get("unified_run_events") is True

    @property
    def token(self) -> str:
        return str(self.payload["token"])

    async def _on_request(self, req: Request) -> dict[str, Any]:
        if req.method == "chat.send":
            run_id = self.fixed_run_id or f"run-{next(self._runs)}"
            self.sessions[run_id] = req.params["bcs_session_id"]
            await self.sends.put(req)
            if self.refuse is not None:
                raise self.refuse
            if self.ack_delay:
                await asyncio.sleep(self.ack_delay)
            if self.reply is not None:
                text = req.params["message"]["content"][0]["text"]
                answer = self.reply(text)
                if answer is not None:
                    asyncio.get_running_loop().call_soon(
                        lambda: asyncio.ensure_future(self.final(run_id, answer, self.routing))
                    )
            return {"run_id": run_id}
        if req.method == "chat.inject":
            await self.injects.put(req)
            return {}
        if req.method == "chat.abort":
            await self.aborts.put(req)
            return {"aborted": True, "aborted_run_ids": [req.params["run_id"]]}
        raise BcnError("unknown_method", req.method)

    async def event(self, run_id: str, state: str, text: str = "", **extra: Any) -> None:
        if self.run_events:
            await self._v3_event(run_id, state, text, **extra)
            return
        payload = {"run_id": run_id, "bcs_group_id": "grp", "state": state,
                   "message": {"role": "assistant", "content": [{"type": "text", "text": text}],
                               "timestamp": 1}, **extra}
        await self.conn.send_event("chat.event", payload)

    async def _v3_event(self, run_id: str, state: str, text: str, **extra: Any) -> None:
        seq = next(self._seqs.setdefault(run_id, itertools.count(1)))
        common = {"runId": run_id, "sessionId": self.sessions.get(run_id, "grp:unknown"),
                  "seq": seq, "ts": 1}
        if state.startswith("tool_call_"):
            name = "agent"
            payload = {**common, "stream": "tool", "toolCallId": extra.get("tool_call_id", "t"),
                       "name": extra.get("tool_name", "tool"),
                       **({"phase": "start"} if state == "tool_call_start" else
                          {"phase": "result", "result": {}, "isError": False})}
        else:
            name = "chat"
            payload = {**common, "state": state, "content": text, **extra}
        await self.conn.send_event(name, payload, seq=seq)

    async def final(self, run_id: str, text: str, routing: dict[str, Any] | None = None) -> None:
        extra = {"routing": routing} if routing else {}
        await self.event(run_id, "final", text, **extra)

    async def close(self) -> None:
        await self.conn.close()
        await asyncio.gather(self._task, return_exceptions=True)

    async def vanish(self) -> None:
        """Drop the TCP connection without a close frame, as a killed process does."""
        self.ws._writer.transport.abort()
        await asyncio.gather(self._task, return_exceptions=True)

    def adopt(self, earlier: TestBot) -> None:
        """Carry on the runs of an earlier connection of the same bot (sessions, v3 seqs)."""
        self.sessions.update(earlier.sessions)
        self._seqs.update(earlier._seqs)

    async def closed_by_hub(self, timeout: float = WAIT) -> bool:
        await asyncio.wait_for(asyncio.shield(self._task), timeout)
        return True


def binding(conversation: str = "room-1", **extra: Any) -> dict[str, Any]:
    return {"channel_type": "webchat", "account_ref": "main", "conversation_id": conversation,
            "group_id": "grp", **extra}


class TestLink:
    """A channel link that records `channel.deliver`s; `hold` keeps them un-acked."""

    __test__ = False

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.conn = Connection(ws, on_request=self._on_request, on_event=self._on_event,
                               name="test-link")
        self.delivers: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.events: asyncio.Queue[Event] = asyncio.Queue()
        self.hold = False
        self.answer_error: BcnError | None = None
        self.payload: dict[str, Any] = {}
        self._released = asyncio.Event()
        self._task = asyncio.create_task(self.conn.run())

    @classmethod
    async def open(cls, http: aiohttp.ClientSession, hub: Hub) -> TestLink:
        return cls(await http.ws_connect(hub.url + "/ws/channel"))

    @classmethod
    async def connect(
        cls, http: aiohttp.ClientSession, hub: Hub, *bindings: dict[str, Any], **params: Any
    ) -> TestLink:
        link = await cls.open(http, hub)
        params.setdefault("token", "link-secret-1")
        params.setdefault("protocol_version", 1)
        params["bindings"] = list(bindings) or [binding()]
        link.payload = await link.conn.request("channel.connect", params)
        return link

    @property
    def binding_id(self) -> str:
        return str(self.payload["bindings"][0]["binding_id"])

    def release(self) -> None:
        """Let held `channel.deliver`s answer (acked, or failing if the link is gone)."""
        self._released.set()

    async def _on_request(self, req: Request) -> dict[str, Any]:
        if req.method != "channel.deliver":
            raise BcnError("unknown_method", req.method)
        await self.delivers.put(req.params)
        if self.hold:
            await self._released.wait()
        if self.answer_error is not None:
            raise self.answer_error
        return {}

    async def _on_event(self, event: Event) -> None:
        await self.events.put(event)

    async def inbound(self, text: str, msg_id: str | None = None, **params: Any) -> dict[str, Any]:
        params.setdefault("binding_id", self.binding_id)
        params.setdefault("sender", {"user_id": "u-alice", "name": "alice", "is_bot": False})
        return await self.conn.request(
            "channel.inbound", {"text": text, "msg_id": msg_id or f"m-{id(text)}", **params}
        )

    async def deliveries_until_final(self) -> list[dict[str, Any]]:
        out = []
        while True:
            item = await next_item(self.delivers)
            out.append(item)
            if item["kind"] in ("final", "error", "aborted"):
                return out

    async def close(self) -> None:
        await self.conn.close()
        await asyncio.gather(self._task, return_exceptions=True)
