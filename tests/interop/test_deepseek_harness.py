"""The BCN server's own published client against a real `bcn-bridge hub` process.

`@avernet-plugin/deepseek-harness-channel-bcn@0.1.0` (protocol v2) is installed from the
npm registry and its protocol code runs unmodified under a minimal Node host
(`host/host.mjs`); only the DeepSeek Harness runtime around it is played by the host.
It reaches the hub through a proxy the test can cut. A human speaks through a channel
link, an SDK echo bot (v3) shares the groups. Covered, in order: HTTP onboarding and the
handshake, heartbeats, a human message in, a streamed reply out with its text, an `@Bot`
inject, an abort, error answers the client parses (and tasks), a dropped connection with a
reply still arriving across it, a message after the reconnect, and one after a hub restart.

Skipped only when node or npm is missing (CI installs both), or when npm cannot reach its
registry (no network): any other install failure fails the test.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest

from bridge.bcn.examples.echo import build_echo_bot
from bridge.retry import Backoff
from tests.hub.hub_clients import TestLink, binding, next_item, nothing_in
from tests.interop.harness import (
    WAIT,
    HubProcess,
    NodeHost,
    RegistryUnreachable,
    installed_client,
    node_tools,
    unreachable_registry,
)
from tests.interop.proxy import CuttableProxy

TOOLS = node_tools()
pytestmark = pytest.mark.skipif(TOOLS is None, reason="node and npm are needed for the "
                                "interop test (CI installs them with apt)")

LINK_TOKEN = "interop-link-token"
REGISTER_TOKEN = "interop-register-token"


def hub_section(tmp_path: Path) -> dict[str, Any]:
    return {
        "listen": "127.0.0.1:0",
        "data_dir": str(tmp_path / "hub-data"),
        "link_tokens": [LINK_TOKEN],
        "register_tokens": [REGISTER_TOKEN],
        "bot_reply_default": "observe",
        "bot_ttl_seconds": 4,  # the client's 1 s heartbeats keep it online throughout
        "sweep_interval_seconds": 0.5,
        "probe_timeout_seconds": 1,
        "request_timeout_seconds": 5,
        "groups": [
            {"id": "ops", "name": "Ops", "driver": "Harness", "bots": ["Harness", "Echo"]},
            {"id": "tasks", "type": "manager_worker", "driver": "Harness",
             "bots": ["Harness", "Echo"]},
        ],
    }


def body(observed: dict[str, Any]) -> str:
    """What a bot was told, without the v2 group-context header the hub prepends."""
    text = str(observed["text"])
    assert text.startswith("[Group Context]\n"), text
    return text.split("[/Group Context]\n\n", 1)[1]


class Scene:
    """Everything one run needs: hub process, proxy, Node host, echo bot, channel link."""

    def __init__(self, tmp_path: Path, modules: Path) -> None:
        assert TOOLS is not None
        self.tmp_path = tmp_path
        self.hub = HubProcess(HubProcess.write_config(tmp_path / "hub.yaml",
                                                      hub_section(tmp_path)))
        self.proxy = CuttableProxy(0)
        self.host = NodeHost(TOOLS[0], modules, "", REGISTER_TOKEN)
        self.echo = build_echo_bot("ws://127.0.0.1:1/ws/bot", stream=False,
                                   token_file=tmp_path / "echo.token",
                                   backoff=Backoff(initial=0.05, maximum=0.2))
        self.http = aiohttp.ClientSession()
        self.link: TestLink | None = None
        self.bindings: dict[str, str] = {}

    async def start(self) -> None:
        await self.hub.start()
        self.proxy.target_port = self.hub.port
        await self.proxy.start()
        self.host.endpoint = f"http://127.0.0.1:{self.proxy.port}/"
        self.echo.url = f"{self.hub.url}/ws/bot"
        await self.echo.start(timeout=WAIT)
        await self.connect_link()
        await self.host.start()

    async def connect_link(self) -> None:
        if self.link is not None:
            await self.link.close()
        self.link = await TestLink.connect(
            self.http, SimpleNamespace(url=self.hub.url),  # type: ignore[arg-type]
            binding("room-ops", group_id="ops"), binding("room-tasks", group_id="tasks"),
            token=LINK_TOKEN, link_name="interop")
        self.bindings = {b["group_id"]: b["binding_id"] for b in self.link.payload["bindings"]}

    async def say(self, group: str, text: str, msg_id: str) -> dict[str, Any]:
        assert self.link is not None
        return await self.link.inbound(text, msg_id, binding_id=self.bindings[group])

    async def delivery(self) -> dict[str, Any]:
        assert self.link is not None
        return await next_item(self.link.delivers, WAIT)  # type: ignore[no-any-return]

    async def until_final(self) -> list[dict[str, Any]]:
        out = []
        while True:
            item = await self.delivery()
            out.append(item)
            if item["kind"] in ("final", "error", "aborted"):
                return out

    async def participant(self, group: str, name: str) -> dict[str, Any]:
        assert self.link is not None
        listed = await self.link.conn.request("channel.participants", {"group_id": group})
        return next(p for p in listed["participants"] if p["name"] == name)  # type: ignore[no-any-return]

    async def close(self) -> None:
        await self.host.stop()
        await self.echo.stop()
        if self.link is not None:
            await self.link.close()
        await self.http.close()
        await self.proxy.stop()
        await self.hub.stop()


@pytest.fixture
async def scene(tmp_path: Path) -> AsyncIterator[Scene]:
    assert TOOLS is not None
    try:
        modules = await installed_client(TOOLS[1])
    except RegistryUnreachable as exc:
        pytest.skip(f"the npm registry cannot be reached here, so the BCN authors' client "
                    f"cannot be installed ({exc})")
    running = Scene(tmp_path, modules)
    try:
        await running.start()
        yield running
    finally:
        await running.close()


async def test_published_client_round_trips_through_the_hub(scene: Scene) -> None:
    host = scene.host
    # ---- onboarding over HTTP and the v2 handshake (the client insists on v2)
    await host.wait_for("connection", connected=True)
    assert any("protocol v2" in o.get("message", "") for o in host.seen("log"))
    assert scene.hub.log_has("bot registered over HTTP: Harness")
    assert scene.hub.log_has("bot onboarded: Harness")
    harness = await scene.participant("ops", "Harness")
    assert harness["online"] is True and harness["role"] == "driver"
    assert harness["summary"] == "Scripted DeepSeek Harness bot for interop tests"

    # ---- heartbeat: the client's bot.status reaches the hub and is answered
    async with asyncio.timeout(WAIT):
        while "dynamic_status" not in (harness := await scene.participant("ops", "Harness")):
            await asyncio.sleep(0.05)
    assert harness["dynamic_status"]["dynamic_summary"] == "DeepSeek Harness BCN channel active"
    assert harness["dynamic_status"]["status"] in ("idle", "busy")

    # ---- a human message in, a streamed reply out (issue 15, defect 1: delta_text)
    said = await scene.say("ops", "hello harness", "m-1")
    session = said["bcs_session_id"]
    turn = await host.wait_for("followup")
    assert body(turn) == "hello harness"
    assert turn["context"]["bcs_session_id"] == session
    assert turn["context"]["group_context"]["recipient_role"] == "driver"
    await host.command("delta", turn=turn["turn"], text="Hello ")
    await host.command("delta", turn=turn["turn"], text="world")
    await host.command("final", turn=turn["turn"])
    reply = await scene.until_final()
    assert [(d["kind"], d["text"]) for d in reply] == [
        ("delta", "Hello "), ("delta", "world"), ("final", "Hello world")]
    assert {d["sender"]["name"] for d in reply} == {"Harness"}

    # ---- an @Bot inject: Echo answers, Harness observes the message and the answer
    mark = len(host.observed)
    await scene.say("ops", "@Echo ping", "m-2")
    injected = await host.wait_for("inject", after=mark)
    assert body(injected) == "@Echo ping"
    echoed = await scene.delivery()
    assert (echoed["sender"]["name"], echoed["text"]) == ("Echo", "@Echo ping")
    assert body(await host.wait_for("inject", after=mark + 1)) == "@Echo ping"

    # ---- an abort: /stop in the chat; the client has no chat.abort (NOT_FOUND) — the
    # hub still stops the run and drops what the client sends for it afterwards
    mark = len(host.observed)
    await scene.say("ops", "think for a long time", "m-3")
    long_turn = await host.wait_for("followup", after=mark)
    await host.command("delta", turn=long_turn["turn"], text="thinking")
    assert (await scene.delivery())["text"] == "thinking"
    assert scene.link is not None
    aborted = await scene.link.conn.request("channel.abort", {"bcs_session_id": session})
    assert len(aborted["aborted_run_ids"]) == 1
    notice = await scene.delivery()
    assert notice["kind"] == "aborted" and notice["run_id"] == aborted["aborted_run_ids"][0]
    await host.command("final", turn=long_turn["turn"])
    assert await nothing_in(scene.link.delivers, 0.3)

    # ---- error answers the client's strict parser accepts (issue 15, defect 2), and tasks
    mark = len(host.observed)
    await scene.say("tasks", "plan the release", "m-4")
    manager_turn = await host.wait_for("followup", after=mark)
    assert manager_turn["context"]["group_context"]["recipient_role"] == "manager"
    missing = await host.command("tool", turn=manager_turn["turn"], name="bcs_assign_task",
                                 args={"target_bot": "Nobody", "message": "x"})
    assert missing["result"]["ok"] is False
    assert missing["result"]["error"] == "target_not_found"
    raw = await host.command("request", method="route.resolve",
                             params={"group_id": "no-such-group", "selectors": []})
    assert raw["result"]["ok"] is False
    assert raw["result"]["error"]["code"] == "group_not_found"
    assert "retry_after_ms" not in raw["result"]["error"]
    assigned = await host.command("tool", turn=manager_turn["turn"], name="bcs_assign_task",
                                  args={"target_bot": "Echo", "message": "count the tests"})
    assert assigned["result"]["ok"] is True and assigned["result"]["status"] == "dispatched"
    assert "count the tests" in (await scene.delivery())["text"]  # the notice
    assert (await scene.delivery())["text"] == "count the tests"  # Echo's answer
    result_turn = await host.wait_for("followup", after=mark + 1)  # the answer, to the manager
    assert body(result_turn) == "count the tests"
    done = await host.command("tool", turn=result_turn["turn"], name="bcs_task_complete",
                              args={"summary": "release planned"})
    assert done["result"] == {"ok": True}
    assert "release planned" in (await scene.delivery())["text"]
    for finished, text in ((result_turn, "noted"), (manager_turn, "planned")):
        await host.command("delta", turn=finished["turn"], text=text)
        await host.command("final", turn=finished["turn"])
        assert [d["text"] for d in await scene.until_final()] == [text, text]

    # ---- a dropped connection: the run started before it still gets its reply
    mark = len(host.observed)
    await scene.say("ops", "survive a drop", "m-5")
    drop_turn = await host.wait_for("followup", after=mark)
    await host.command("delta", turn=drop_turn["turn"], text="part one, ")
    assert (await scene.delivery())["text"] == "part one, "
    scene.proxy.blocked = True
    await scene.proxy.cut()
    await host.wait_for("connection", after=mark, connected=False)
    await host.command("delta", turn=drop_turn["turn"], text="part two")  # queued by the client
    await host.command("final", turn=drop_turn["turn"])
    scene.proxy.blocked = False
    await host.wait_for("connection", after=mark, connected=True, connects=2)
    rest = await scene.until_final()
    assert [(d["kind"], d["text"]) for d in rest] == [
        ("delta", "part two"), ("final", "part one, part two")]

    # ---- after the reconnect a new message is not taken for a duplicate (defect 3)
    mark = len(host.observed)
    await scene.say("ops", "after the drop", "m-6")
    after_drop = await host.wait_for("followup", after=mark)
    assert body(after_drop) == "after the drop"
    await host.command("delta", turn=after_drop["turn"], text="still here")
    await host.command("final", turn=after_drop["turn"])
    assert [d["text"] for d in await scene.until_final()] == ["still here", "still here"]

    # ---- and after a hub restart (new process, new port, same data): ids stay fresh
    mark = len(host.observed)
    assert await scene.hub.stop() == 0
    await host.wait_for("connection", after=mark, connected=False)
    await scene.hub.start()
    scene.proxy.target_port = scene.hub.port
    await scene.connect_link()
    await host.wait_for("connection", after=mark, connected=True, connects=3)
    again = await scene.say("ops", "after the restart", "m-7")
    assert again["bcs_session_id"] == session and again["deliveries"][0]["name"] == "Harness"
    restarted_turn = await host.wait_for("followup", after=mark)
    assert body(restarted_turn) == "after the restart"
    await host.command("delta", turn=restarted_turn["turn"], text="back again")
    await host.command("final", turn=restarted_turn["turn"])
    assert [d["text"] for d in await scene.until_final()] == ["back again", "back again"]
    assert not any("Ignoring invalid BCN WebSocket frame" in o.get("message", "")
                   for o in host.seen("log"))


async def test_an_unreachable_registry_is_told_apart_from_a_failed_install(
    tmp_path: Path,
) -> None:
    """What the skip above rests on, against real npm: a registry nobody answers at reads as
    unreachable; a package the registry does not have does not."""
    assert TOOLS is not None
    (tmp_path / "package.json").write_text(
        '{"name": "probe", "version": "1.0.0", "dependencies": {"left-pad": "1.3.0"}}')
    child = await asyncio.create_subprocess_exec(
        TOOLS[1], "install", "--no-audit", "--no-fund", "--ignore-scripts", "--fetch-retries=0",
        "--no-package-lock", "--loglevel=error", cwd=tmp_path,
        env={**os.environ, "npm_config_registry": "http://127.0.0.1:9/",
             "npm_config_cache": str(tmp_path / "cache")},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(child.communicate(), WAIT * 4)
    assert child.returncode != 0
    assert unreachable_registry(out.decode())
    assert not unreachable_registry("npm error code E404\nnpm error 404 Not Found - GET "
                                    "https://registry.npmjs.org/no-such-package")
