"""Operating the Matrix account against a real Synapse: doctor's checks, and no token in
any log line."""

from __future__ import annotations

import logging

from matrix_support import AS_TOKEN, HS_TOKEN, bot_messages
from test_matrix_e2e import ECHO, bridged_room

from adapters.matrix.doctor import diagnose


async def test_doctor_checks_homeserver_tokens_and_listener(homeserver, start_system, ada):
    found = await diagnose("main", homeserver.account())
    assert [d.status for d in found] == ["ok", "ok", "ok"], found
    assert "free for the push listener" in found[2].what

    await bridged_room(ada, start_system, bots=False)
    found = await diagnose("main", homeserver.account())
    assert [d.status for d in found] == ["ok", "ok", "ok"], found
    assert "the homeserver reaches it" in found[2].what

    found = await diagnose("main", homeserver.account(as_token="a-wrong-token"))
    assert [d.status for d in found] == ["ok", "fail"]
    assert "app_service_config_files" in found[1].fix

    found = await diagnose("main", homeserver.account(homeserver="http://127.0.0.1:9"))
    assert [d.status for d in found] == ["fail"]


async def test_no_token_in_any_log_line(start_system, ada, caplog):
    caplog.set_level(logging.DEBUG)
    room, _ = await bridged_room(ada, start_system, stream=False)
    await ada.say(room, "a quiet word")
    await ada.wait_for(room, lambda events: [t for _, t in bot_messages(events, ECHO)
                                             if t == "a quiet word"])
    assert caplog.records
    assert AS_TOKEN not in caplog.text and HS_TOKEN not in caplog.text
