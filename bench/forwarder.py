"""The baseline of `bench/hub_overhead.py`: a bare WebSocket forwarder of the hub's frames,
and a raw v2 echo bot that both the hub and the forwarder serve.

    python bench/forwarder.py forwarder      # prints `READY ws://127.0.0.1:PORT`, serves
    python bench/forwarder.py bot URL        # a raw v2 echo bot on URL/ws/bot

The forwarder answers the same requests with frames of the same shape and size as the hub
(`channel.connect`, `channel.inbound` → `chat.send` → the bot's `chat.event` final →
`channel.deliver`), through the hub's own wire layer (`bridge.bcn.Connection`) on the loop
the hub runs on (`bridge.event_loop`), and does nothing else: no session state beyond two
dicts, no store, no routing, no checks. It is what the wire alone costs, so the hub's
figures divided by its figures are what the hub's own work costs.

The raw bot is the same for both: it answers each `chat.send` with a run id and, at once, a
final that echoes the message (from `session_context.message`), written as plain JSON on a
plain socket, so no bot SDK weighs on either side.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bridge import event_loop
from bridge.bcn import Connection, Event, Request
from bridge.bcn.limits import MAX_FRAME_BYTES

BOT_NAME = "Echo"
GROUP = "bench"


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def now_ms() -> int:
    return int(time.time() * 1000)


def context_text(session_id: str, author: str, text: str) -> str:
    """The text the hub sends a bot: its group context block, then the message."""
    return (f"[Group Context]\nGroup: Bench ({GROUP})\nSession: {session_id}\n"
            f"Participants: {BOT_NAME}, {author}\nFrom: {author}\nYou are: {BOT_NAME}\n"
            f"You are mentioned: no\n[/Group Context]\n\n{text}")


class Forwarder:
    """One bot connection and any number of links; runs mapped to where they go back.

    Both sockets are the hub's own wire layer (`bridge.bcn.Connection`: the same framing,
    send queues and request bookkeeping), so what differs from the hub is the hub's work."""

    def __init__(self) -> None:
        self.bot: Connection | None = None
        self.bot_uuid = "bot-" + "0" * 32
        self.bindings: dict[str, dict[str, Any]] = {}
        self.runs: dict[str, tuple[Connection, dict[str, Any]]] = {}
        self.ids = itertools.count(1)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/healthz", self.healthz)
        app.router.add_get("/ws/bot", self.bot_socket)
        app.router.add_get("/ws/channel", self.link_socket)
        return app

    async def healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"bots_online": int(self.bot is not None)})

    async def _serve(self, request: web.Request, name: str, on_request: Any,
                     on_event: Any = None) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=MAX_FRAME_BYTES)
        await ws.prepare(request)
        conn = Connection(ws, name=name, on_request=None, on_event=on_event)
        conn.on_request = lambda req: on_request(conn, req)
        await conn.run()
        return ws

    async def bot_socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = await self._serve(request, "hub-bot", self.bot_request, self.bot_event)
        self.bot = None
        return ws

    async def bot_request(self, conn: Connection, req: Request) -> dict[str, Any]:
        self.bot = conn
        token = "tok-" + "0" * 32
        return {"is_new": True, "token": token, "bot_uuid": self.bot_uuid, "name": BOT_NAME,
                "protocol_version": 2, "min_supported_version": 1,
                "capabilities": {"unified_run_events": False, "canonical_session_id": False,
                                 "tool_result_task_intent": False},
                "env": {"BCN_BOT_UUID": self.bot_uuid, "BCN_BOT_TOKEN": token}}

    async def link_socket(self, request: web.Request) -> web.WebSocketResponse:
        return await self._serve(request, "hub-link", self.link_request)

    async def link_request(self, conn: Connection, req: Request) -> dict[str, Any]:
        if req.method == "channel.connect":
            return self.connect(req.params)
        if req.method == "channel.inbound":
            return await self.inbound(conn, req.params)
        return {}

    def connect(self, params: dict[str, Any]) -> dict[str, Any]:
        bindings = []
        for spec in params.get("bindings", []):
            digest = hashlib.sha256(spec["conversation_id"].encode()).hexdigest()
            binding = {**spec, "binding_id": "bnd_" + digest[:20],
                       "session_scope": "conversation", "identity_forwarding": False,
                       "outbound_visibility": "full_transcript"}
            binding["session"] = f"{GROUP}:channel_{spec['channel_type']}_{digest[:8]}"
            self.bindings[binding["binding_id"]] = binding
            bindings.append({k: v for k, v in binding.items() if k != "session"})
        return {"link_id": "lnk-000000000000", "protocol_version": 1,
                "min_supported_version": 1, "bindings": bindings, "pending_deliveries": 0}

    async def inbound(self, link: Connection, params: dict[str, Any]) -> dict[str, Any]:
        binding = self.bindings[params["binding_id"]]
        session = binding["session"]
        author = "user-" + "0" * 16
        text = params.get("text", "")
        message = {"binding": binding, "msg_id": params.get("msg_id"), "session": session}
        assert self.bot is not None
        answer = await self.bot.send_request("chat.send", {
            "session_key": GROUP, "bcs_group_id": GROUP, "bcs_session_id": session,
            "message": {"role": "user", "content": [
                {"type": "text", "text": context_text(session, author, text)}],
                "timestamp": now_ms()},
            "channel": {"source": binding["channel_type"],
                        "conversation_id": binding["conversation_id"], "thread_id": None,
                        "message_id": params.get("msg_id"), "is_bot": False,
                        "user_id": author},
            "session_context": {"session_id": GROUP, "participants": [BOT_NAME, author],
                                "originator": author, "from": author,
                                "you_are_mentioned": False, "is_sender": False,
                                "mentions": [], "message": text, "group_type": "default",
                                "recipient": self.bot_uuid, "recipient_role": "driver"},
            "timeout_ms": 300000, "idempotency_key": f"run-{next(self.ids):0>32}"},
            wait=False)
        answer.add_done_callback(lambda f: self.acked(f, link, message))
        return {"bcs_group_id": GROUP, "bcs_session_id": session, "is_new_session": False,
                "duplicate": False, "deliveries": [
                    {"bot_uuid": self.bot_uuid, "name": BOT_NAME, "method": "chat.send"}]}

    def acked(self, answer: asyncio.Future[dict[str, Any]], link: Connection,
              message: dict[str, Any]) -> None:
        if not answer.cancelled() and answer.exception() is None:
            self.runs[answer.result()["run_id"]] = (link, message)

    async def bot_event(self, event: Event) -> None:
        payload = event.payload
        if event.event != "chat.event" or payload.get("state") != "final":
            return
        # The final may come before the chat.send's answer is read: wait a turn for it.
        run_id = payload["run_id"]
        for _ in range(100):
            if run_id in self.runs:
                break
            await asyncio.sleep(0)
        link, message = self.runs.pop(run_id)
        text = payload["message"]["content"][0]["text"]
        delivered = await link.send_request("channel.deliver", {
            "event_id": f"evt-00000000-{next(self.ids)}",
            "binding_id": message["binding"]["binding_id"], "thread_id": None,
            "bcs_session_id": message["session"], "run_id": run_id,
            "source_msg_id": message["msg_id"],
            "sender": {"bot_uuid": self.bot_uuid, "name": BOT_NAME}, "kind": "final",
            "text": text, "seq": 1, "timestamp": now_ms()}, wait=False)
        delivered.add_done_callback(lambda f: f.cancelled() or f.exception())


async def forward() -> None:
    runner = web.AppRunner(Forwarder().app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    event_loop.settle()  # as `bcn-bridge hub` does once it is up
    print(f"READY ws://127.0.0.1:{port}", flush=True)
    await asyncio.Event().wait()


async def echo_bot(url: str) -> None:
    """The raw v2 echo bot: a final for every chat.send, at once."""
    runs = itertools.count(1)
    async with aiohttp.ClientSession() as http, \
            http.ws_connect(url + "/ws/bot", max_msg_size=0) as ws:
        await ws.send_str(dumps({"type": "req", "id": "connect", "method": "bot.connect",
                                 "params": {"name": BOT_NAME, "protocol_version": 2}}))
        async for msg in ws:
            frame = orjson.loads(msg.data)
            if frame.get("type") != "req":
                continue
            if frame["method"] != "chat.send":
                await ws.send_str(dumps({"type": "res", "id": frame["id"], "ok": True,
                                         "payload": {}}))
                continue
            run_id = f"run-{next(runs)}"
            params = frame["params"]
            await ws.send_str(dumps({"type": "res", "id": frame["id"], "ok": True,
                                     "payload": {"run_id": run_id}}))
            await ws.send_str(dumps({"type": "event", "event": "chat.event", "seq": 1,
                                     "payload": {
                "run_id": run_id, "bcs_group_id": params["bcs_group_id"], "state": "final",
                "message": {"role": "assistant", "content": [
                    {"type": "text", "text": params["session_context"]["message"]}],
                    "timestamp": now_ms()}}}))


def main() -> None:
    if sys.argv[1:2] == ["forwarder"]:
        event_loop.run(forward())  # the loop `bcn-bridge hub` runs on
    elif len(sys.argv) == 3 and sys.argv[1] == "bot":
        event_loop.run(echo_bot(sys.argv[2]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
