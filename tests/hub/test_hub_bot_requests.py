"""Bot → hub requests over real sockets: route.resolve, session.complete, task.*.

Semantics are the BCN server's (its bot WebSocket dispatcher): payload shapes, error codes,
and who may do what.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from hub_clients import TestBot, TestLink, binding, next_item

from bridge.bcn import BcnError
from bridge.hub import Hub

TASK_GROUPS = [
    {"id": "grp", "name": "Ops", "driver": "Helper", "bots": ["Helper", "Mantis"]},
    {"id": "tasks", "type": "manager_worker", "driver": "Lead", "bots": ["Lead", "Worker"]},
]


async def task_hub(
    http: aiohttp.ClientSession, start_hub: Any, *names: str
) -> tuple[Hub, list[TestBot]]:
    """A hub with the task groups and these bots connected."""
    hub = await start_hub(groups=TASK_GROUPS)
    return hub, [await TestBot.connect(http, hub, name=name) for name in names]


async def task_group_session(
    http: aiohttp.ClientSession, start_hub: Any, name: str
) -> tuple[TestBot, str]:
    """A hub with the task groups, bot `name` connected, and a session of group `tasks`."""
    hub, (bot,) = await task_hub(http, start_hub, name)
    link = await TestLink.connect(http, hub, binding(group_id="tasks"))
    return bot, (await link.inbound("hi", "m1"))["bcs_session_id"]


async def refused(bot: TestBot, method: str, params: dict[str, Any]) -> BcnError:
    with pytest.raises(BcnError) as caught:
        await bot.conn.request(method, params)
    assert caught.value.message.strip()
    return caught.value


async def test_route_resolve(http: aiohttp.ClientSession, hub: Hub) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    mantis = await TestBot.connect(http, hub, name="Mantis")
    link = await TestLink.connect(http, hub)
    session = (await link.inbound("hi", "m1"))["bcs_session_id"]
    ask = {"group_id": "grp", "session_id": session,
           "selectors": [{"type": "name", "value": "Mantis"},
                         {"type": "bot", "value": helper.uuid},
                         {"type": "name", "value": "Mantis"}]}
    assert await helper.conn.request("route.resolve", ask) == {"ok": True, "resolved": [
        {"type": "bot", "value": mantis.uuid, "bot_name": "Mantis", "role": "consultant"},
        {"type": "bot", "value": helper.uuid, "bot_name": "Helper", "role": "driver"}]}
    unknown = await helper.conn.request("route.resolve", {
        "group_id": session,  # a session-shaped group id names its session
        "selectors": [{"type": "name", "value": "mantis"}]})  # names match exactly
    assert unknown["ok"] is False and unknown["error"] == "UNKNOWN_ROUTE_TARGET"
    assert [c["bot_name"] for c in unknown["candidates"]] == ["Mantis"]
    empty = await helper.conn.request("route.resolve", {"group_id": "grp", "selectors": []})
    assert empty["error"] == "INVALID_ROUTE_SELECTOR" and len(empty["candidates"]) == 2
    odd = await helper.conn.request("route.resolve", {
        "group_id": "grp", "selectors": [{"type": "role", "value": "driver"}]})
    assert odd["error"] == "INVALID_ROUTE_SELECTOR"
    for params, code in (({"group_id": "nope", "selectors": []}, "group_not_found"),
                         ({"group_id": "grp", "session_id": "grp:gone", "selectors": []},
                          "session_not_found"),
                         ({"group_id": "grp", "session_id": "other:x", "selectors": []},
                          "group_not_found"),
                         ({"group_id": "grp"}, "invalid_request"),
                         ({"selectors": []}, "invalid_request")):
        assert (await refused(helper, "route.resolve", params)).code == code, params


async def test_route_resolve_session_of_another_group(
    http: aiohttp.ClientSession, start_hub: object
) -> None:
    lead, session = await task_group_session(http, start_hub, "Lead")
    error = await refused(lead, "route.resolve", {"group_id": "grp", "session_id": "grp",
                                                  "selectors": []})
    assert error.code == "session_not_found"
    error = await refused(lead, "route.resolve", {
        "group_id": "grp", "session_id": session.replace("tasks:", "grp:"), "selectors": []})
    assert error.code == "session_not_found"
    resolved = await lead.conn.request("route.resolve", {
        "group_id": "tasks", "session_id": session,
        "selectors": [{"type": "name", "value": "Lead"}]})
    assert resolved["resolved"][0]["role"] == "manager"


async def test_session_complete(http: aiohttp.ClientSession, hub: Hub) -> None:
    helper = await TestBot.connect(http, hub, name="Helper")
    link = await TestLink.connect(http, hub)
    session = (await link.inbound("hi", "m1"))["bcs_session_id"]
    await next_item(helper.sends)
    done = await helper.conn.request("session.complete", {"session_id": session,
                                                          "output": "all done"})
    assert done == {"session_id": session, "group_id": "grp", "status": "completed",
                    "output": "all done", "error": None}
    notice = await next_item(link.delivers)
    assert notice["kind"] == "system" and "all done" in notice["text"]
    again = await helper.conn.request("session.complete", {"session_id": session})
    assert again == {"already_completed": True}
    fresh = await link.inbound("next topic", "m2")
    assert fresh["is_new_session"] is True and fresh["bcs_session_id"] != session
    assert (await refused(helper, "session.complete", {"session_id": "grp:nope"})).code == \
        "session_not_found"
    assert (await refused(helper, "session.complete", {})).code == "invalid_request"
    assert (await refused(helper, "session.complete", {"session_id": fresh["bcs_session_id"],
                                                       "error": 7})).code == "invalid_request"


async def test_session_complete_needs_a_member(
    http: aiohttp.ClientSession, start_hub: object
) -> None:
    outsider, session = await task_group_session(http, start_hub, "Helper")
    error = await refused(outsider, "session.complete", {"session_id": session})
    assert error.code == "unauthorized"


async def test_tasks_in_a_manager_worker_group(
    http: aiohttp.ClientSession, start_hub: object
) -> None:
    hub, (lead, worker) = await task_hub(http, start_hub, "Lead", "Worker")
    link = await TestLink.connect(http, hub, binding(group_id="tasks"))
    await link.inbound("please review the release", "m1")
    first = await next_item(lead.sends)
    context = first.params["session_context"]
    assert (context["group_type"], context["recipient_role"]) == ("manager_worker", "manager")
    assert (await next_item(worker.injects)).params["session_context"]["recipient_role"] == \
        "worker"

    dispatched = await lead.conn.request("task.dispatch", {
        "group_id": "tasks", "target_bot": "worker", "message": "check the changelog",
        "response_mode": "full"})
    assert dispatched["status"] == "dispatched" and dispatched["task_id"].startswith("task-")
    notice = await next_item(link.delivers)
    assert notice["kind"] == "system" and "check the changelog" in notice["text"]
    task = await next_item(worker.sends)
    assert task.params["message"]["content"][0]["text"] == "check the changelog"
    assert task.params["session_context"]["task_id"] == dispatched["task_id"]
    assert task.params["session_context"]["from"] == "Lead"

    assert await worker.conn.request("task.message", {"group_id": "tasks",
                                                      "message": "halfway"}) == {
        "status": "sent"}
    assert "halfway" in (await next_item(link.delivers))["text"]
    assert (await next_item(lead.sends)).params["message"]["content"][0]["text"] == "halfway"

    await worker.final("run-1", "changelog looks fine")  # the task's result
    assert (await next_item(link.delivers))["text"] == "changelog looks fine"
    result = await next_item(lead.sends)
    assert result.params["message"]["content"][0]["text"] == "changelog looks fine"
    assert result.params["session_context"]["routing_reason"].startswith("result of task")

    assert await lead.conn.request("task.complete", {"group_id": "tasks",
                                                     "summary": "release approved"}) == {
        "ok": True}
    assert "release approved" in (await next_item(link.delivers))["text"]
    assert (await link.inbound("new release", "m2"))["is_new_session"] is True


async def test_task_errors_use_the_servers_codes(
    http: aiohttp.ClientSession, start_hub: object
) -> None:
    hub, (lead, worker, helper) = await task_hub(http, start_hub, "Lead", "Worker", "Helper")
    link = await TestLink.connect(http, hub, binding(group_id="tasks"), binding("ops"))
    tasks_binding, ops_binding = (b["binding_id"] for b in link.payload["bindings"])
    await link.inbound("start", "m1", binding_id=tasks_binding)
    await next_item(lead.sends)
    ask = {"group_id": "tasks", "target_bot": "Worker", "message": "do it"}
    cases = [
        (lead, "task.dispatch", {**ask, "target_bot": "Nobody"}, "target_not_found"),
        (lead, "task.dispatch", {**ask, "target_bot": "Lead"}, "target_not_found"),
        (lead, "task.dispatch", {**ask, "response_mode": "some"}, "invalid_request"),
        (lead, "task.dispatch", {**ask, "message": " "}, "invalid_request"),
        (lead, "task.dispatch", {**ask, "group_id": "nope"}, "group_not_found"),
        (helper, "task.dispatch", ask, "unauthorized"),  # not a member of the group
        (lead, "task.complete", {"group_id": "tasks", "summary": "x", "status": "meh"},
         "invalid_status"),
        (lead, "task.message", {"group_id": "tasks", "message": "hi"}, "unauthorized"),
        (worker, "task.complete", {"group_id": "tasks", "summary": "x"}, "not_driver"),
        (worker, "task.message", {"group_id": "tasks", "message": "hi"}, "invalid_request"),
    ]
    for bot, method, params, code in cases:
        assert (await refused(bot, method, params)).code == code, (method, params)
    await worker.close()
    error = await refused(lead, "task.dispatch", ask)
    assert error.code == "bot_not_connected"
    await link.inbound("@Helper hi", "m2", binding_id=ops_binding)
    await next_item(helper.sends)
    error = await refused(helper, "task.dispatch", {**ask, "group_id": "grp"})
    assert error.code == "unsupported_service_mode"


async def test_unknown_methods_stay_unknown(http: aiohttp.ClientSession, hub: Hub) -> None:
    bot = await TestBot.connect(http, hub, name="Helper")
    assert (await refused(bot, "task.explode", {})).code == "unknown_method"
