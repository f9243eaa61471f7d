"""The bot's local stores: chat history (memory and JSON file) and the token file."""

from __future__ import annotations

import os
import stat

import pytest

from bridge.bcn.bot import HistoryStore, load_token, save_token
from bridge.bcn.bot.message import IncomingMessage, text_of


def test_history_is_bounded_per_session_and_in_sessions():
    store = HistoryStore(max_messages_per_session=3, max_sessions=2)
    for index in range(5):
        store.record("a", "user", f"m{index}", index)
    assert [m["content"] for m in store.messages("a")] == ["m2", "m3", "m4"]
    assert [m["content"] for m in store.messages("a", limit=2)] == ["m3", "m4"]
    assert store.messages("a", limit=0) == []
    store.record("b", "user", "hi", 1)
    store.record("a", "assistant", "again", 9)  # "a" is now the most recently used
    store.record("c", "user", "new", 2)
    assert store.messages("b") == [] and store.messages("a") and store.messages("c")


def test_history_file_survives_a_restart(tmp_path):
    path = tmp_path / "history.json"
    store = HistoryStore(path=path)
    store.record("grp:s1", "user", "hello", 1, session_id="grp")
    store.record("grp:s1", "assistant", "hi!", 2, session_id="grp")
    reloaded = HistoryStore(path=path)
    assert reloaded.messages("grp:s1") == [
        {"role": "user", "content": "hello", "timestamp": 1},
        {"role": "assistant", "content": "hi!", "timestamp": 2},
    ]
    assert reloaded.session_id("grp:s1") == "grp"


def test_broken_history_file_is_a_clear_error(tmp_path):
    path = tmp_path / "history.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="unreadable"):
        HistoryStore(path=path)
    path.write_text("[]")
    with pytest.raises(ValueError, match="sessions"):
        HistoryStore(path=path)


def test_token_file_round_trip_is_private(tmp_path):
    path = tmp_path / "nested" / "bot.token"
    assert load_token(path) is None
    save_token(path, "tok-1")
    save_token(path, "tok-2")
    assert load_token(path) == "tok-2"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["bot.token"]


def test_empty_or_unreadable_token_file(tmp_path):
    empty = tmp_path / "empty.token"
    empty.write_text("\n")
    assert load_token(empty) is None
    with pytest.raises(ValueError, match="cannot read token file"):
        load_token(tmp_path)  # a directory


def test_message_text_and_protocol_helpers():
    assert text_of([{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text",
                                                                        "text": "b"}]) == "ab"
    assert text_of("plain") == "plain" and text_of(None) == ""
    request = "```\n[REQUEST → @Rules]\nFrom: Bob\nRequestId: bob-1\nTask: time\nDepth: 1/5\n```"
    message = IncomingMessage.from_params({"session_key": "grp:s", "message": {
        "content": [{"type": "text", "text": request}]}})
    assert message.bcs_group_id == "grp"  # derived from the session key when absent
    assert message.protocol is not None and message.protocol.request_id == "bob-1"
    assert message.sender_name is None and not message.you_are_mentioned


def test_sender_name_uses_actor_name_only_with_the_forwarding_marker():
    def message(channel):
        return IncomingMessage.from_params({
            "session_key": "grp:s", "channel": channel,
            "session_context": {"from": "user-5f2a"}, "message": {"content": "hi"}})

    forwarded = message({"identity_forwarding": True, "user_id": "u1", "actor_name": "Alice"})
    assert forwarded.sender_name == "Alice"
    unmarked = message({"user_id": "u1", "actor_name": "Alice"})
    assert unmarked.sender_name == "user-5f2a"
    off = message({"identity_forwarding": False, "actor_name": "Alice"})
    assert off.sender_name == "user-5f2a"
