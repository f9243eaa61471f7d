"""The push listener against the bridge's own store: who may push, and a transaction the
homeserver sends again (it does until it is acked) is relayed once — also after a restart."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from datetime import datetime
from typing import Any

import aiohttp
from matrix_support import HS_TOKEN, System, bot_messages
from test_matrix_e2e import ECHO, bridged_room

from adapters.matrix import MatrixAdapter


def listener_url(system: System, txn_id: str, prefix: str = "/_matrix/app/v1") -> str:
    adapter = matrix_adapter(system)
    assert adapter.listener is not None and adapter.listener.bound is not None
    host, port = adapter.listener.bound
    return f"http://{host}:{port}{prefix}/transactions/{txn_id}"


def matrix_adapter(system: System) -> MatrixAdapter:
    [adapter] = [a for a in system.app.adapters if isinstance(a, MatrixAdapter)]
    return adapter


def message_event(room_id: str, sender: str, text: str) -> dict[str, Any]:
    """A person's message as the homeserver pushes it (its id made up by the test)."""
    return {"type": "m.room.message", "room_id": room_id, "sender": sender,
            "event_id": f"${os.urandom(9).hex()}:localhost",
            "origin_server_ts": int(time.time() * 1000),
            "content": {"msgtype": "m.text", "body": text}}


async def push(url: str, events: list[dict[str, Any]], *, token: str | None = HS_TOKEN,
               query: bool = False, timeout: float = 10) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token and not query else {}
    params = {"access_token": token} if token and query else {}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
        async with session.put(url, json={"events": events}, headers=headers,
                               params=params) as answer:
            return answer.status, await answer.json(content_type=None)


async def test_a_forged_transaction_is_refused_and_logged_once(start_system, ada, caplog):
    caplog.set_level(logging.WARNING, logger="adapters.matrix")
    room, system = await bridged_room(ada, start_system, stream=False)
    forged = [message_event(room, ada.user_id, "forged words")]

    for attempt in range(3):
        status, body = await push(listener_url(system, f"forged-{attempt}"), forged,
                                  token="not-the-hs-token", query=attempt == 1)
        assert status == 403 and body["errcode"] == "M_FORBIDDEN"
    status, _ = await push(listener_url(system, "no-token"), forged, token=None)
    assert status == 401

    refusals = [r for r in caplog.records if "without the right hs_token" in r.getMessage()]
    assert len(refusals) == 1
    assert "not-the-hs-token" not in caplog.text and HS_TOKEN not in caplog.text
    await ada.say(room, "the real one")
    await ada.wait_for(room, lambda events: [t for _, t in bot_messages(events, ECHO)
                                             if t == "the real one"])
    assert "forged words" not in [t for _, t in bot_messages(await ada.events(room), ECHO)]


async def test_a_transaction_sent_again_is_relayed_once(start_system, ada):
    room, system = await bridged_room(ada, start_system, stream=False)
    events = [message_event(room, ada.user_id, "pushed twice")]

    assert await push(listener_url(system, "again-1"), events) == (200, {})
    assert await push(listener_url(system, "again-1", prefix=""), events) == (200, {})

    await ada.wait_for(room, lambda found: [t for _, t in bot_messages(found, ECHO)
                                            if t == "pushed twice"])
    await asyncio.sleep(1.0)  # time for a second reply, were there one
    texts = [t for _, t in bot_messages(await ada.events(room), ECHO)]
    assert texts.count("pushed twice") == 1
    assert await matrix_adapter(system).state.store.seen.has("matrix:main:txn:again-1")


async def test_a_transaction_not_acked_before_a_restart_is_relayed_once(start_system, ada):
    """The first bridge hands the events to the core but stops before it acks; the
    homeserver sends the transaction again to the next one."""
    room, first = await bridged_room(ada, start_system, stream=False)
    events = [message_event(room, ada.user_id, "across a restart")]
    adapter = matrix_adapter(first)
    never = asyncio.Event()

    seen = adapter.state.store.seen
    add = seen.add

    async def done_never(key: str, now: datetime) -> bool:
        """Marking the transaction seen never finishes (the bridge dies just then)."""
        if key.startswith("matrix:main:txn:"):
            await never.wait()
        return await add(key, now)

    seen.add = done_never  # type: ignore[method-assign]
    unacked = asyncio.ensure_future(push(listener_url(first, "restart-1"), events))
    await ada.wait_for(room, lambda found: [t for _, t in bot_messages(found, ECHO)
                                            if t == "across a restart"])
    assert not unacked.done()
    await first.stop()
    await asyncio.gather(unacked, return_exceptions=True)

    second = await start_system(room, stream=False)
    assert await push(listener_url(second, "restart-1"), events) == (200, {})
    await asyncio.sleep(1.5)  # time for a second reply, were there one
    texts = [t for _, t in bot_messages(await ada.events(room), ECHO)]
    assert texts.count("across a restart") == 1
