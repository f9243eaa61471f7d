"""The routing table as pure functions: no sockets, no hub."""

from __future__ import annotations

import pytest

from bridge.bcn.run_events import message_text
from bridge.hub.bot_messages import Utterance, chat_params
from bridge.hub.routing import (
    Participant,
    RoutingError,
    RoutingRequest,
    Selector,
    decide_route,
    find_mentions,
    parse_routing,
)

HELPER = Participant("u-helper", "Helper")
MANTIS = Participant("u-mantis", "Mantis")
PRIME = Participant("u-prime", "Mantis Prime")
SLEEPY = Participant("u-sleepy", "Sleepy", online=False)
ALL = [HELPER, MANTIS, PRIME, SLEEPY]


def route(**kwargs: object) -> tuple[set[str], set[str], str]:
    decision = decide_route(ALL, driver_uuid="u-helper", **kwargs)  # type: ignore[arg-type]
    return set(decision.send), set(decision.inject), decision.rule


def test_default_driver_answers_others_observe_offline_skipped() -> None:
    assert route(text="hello") == ({"u-helper"}, {"u-mantis", "u-prime"}, "default")


def test_no_driver_means_nobody_answers() -> None:
    decision = decide_route(ALL, driver_uuid=None, text="hello")
    assert decision.send == () and decision.rule == "nobody"


def test_mentions_are_case_insensitive_and_longest_first() -> None:
    assert find_mentions("hi @mantis prime and @HELPER", ["Mantis", "Mantis Prime", "Helper"]) \
        == ["Mantis Prime", "Helper"]
    assert find_mentions("@Mantis, go", ["Mantis", "Mantis Prime"]) == ["Mantis"]
    assert route(text="@Mantis Prime look") == ({"u-prime"}, {"u-helper", "u-mantis"},
                                                 "mentions")


def test_mentions_need_word_boundaries() -> None:
    names = ["Helper"]
    assert find_mentions("mail bob@Helper now", names) == []
    assert find_mentions("@Helpers unite", names) == []
    assert find_mentions("(@Helper)", names) == ["Helper"]
    assert find_mentions("@Helper@Helper", names) == ["Helper"]
    assert find_mentions("no at sign", names) == []


def test_mentions_after_text_whose_casefold_is_longer() -> None:
    # "ß" casefolds to "ss" and "İ" to two characters: positions must not drift.
    assert find_mentions("Straße @Helper bitte", ["Helper"]) == ["Helper"]
    assert find_mentions("İ @helper", ["Helper"]) == ["Helper"]
    assert find_mentions("ßß@Hel", ["Hel"]) == []  # not at a word start, and no crash
    assert find_mentions("ßßßß @Help", ["Help"]) == ["Help"]
    assert route(text="Grüße aus der Straße, @Mantis") == (
        {"u-mantis"}, {"u-helper", "u-prime"}, "mentions")


def test_mention_of_offline_bot_sends_to_nobody() -> None:
    assert route(text="@Sleepy wake up") == (set(), {"u-helper", "u-mantis", "u-prime"},
                                             "mentions")


def test_at_all_sends_to_everyone_online() -> None:
    assert route(text="@all standup") == ({"u-helper", "u-mantis", "u-prime"}, set(),
                                          "mentions")
    assert route(text="x", mentions=["ALL"])[0] == {"u-helper", "u-mantis", "u-prime"}


def test_mentions_param_adds_names_and_ignores_strangers() -> None:
    assert route(text="look", mentions=["mantis", "Stranger"])[0] == {"u-mantis"}
    assert route(text="look", mentions=["Stranger"])[2] == "default"


def test_sender_never_gets_its_own_message() -> None:
    send, inject, _ = route(text="@Mantis and @Helper", sender_uuid="u-mantis")
    assert send == {"u-helper"} and "u-mantis" not in inject
    send, inject, _ = route(text="@all", sender_uuid="u-helper")
    assert "u-helper" not in send | inject
    send, inject, _ = route(text="plain", sender_uuid="u-helper")  # the driver itself
    assert send == set() and inject == {"u-mantis", "u-prime"}


def test_routing_field_beats_mentions() -> None:
    routing = RoutingRequest((Selector("name", "mantis"),))
    assert route(text="@Helper do it", routing=routing)[0] == {"u-mantis"}
    routing = RoutingRequest((Selector("bot", "u-prime"), Selector("name", "Helper")))
    assert route(text="x", routing=routing) == ({"u-prime", "u-helper"}, {"u-mantis"},
                                                "routing")


def test_routing_modes() -> None:
    nobody = RoutingRequest((Selector("name", "Sleepy"),), mode="required")
    assert route(text="@Mantis", routing=nobody)[:2] == (set(),
                                                        {"u-helper", "u-mantis", "u-prime"})
    fallback = RoutingRequest((Selector("name", "Sleepy"),), mode="optional")
    assert route(text="@Mantis", routing=fallback)[0] == {"u-mantis"}
    assert route(text="plain", routing=fallback)[0] == {"u-helper"}


def test_include_self() -> None:
    own = RoutingRequest((Selector("name", "Helper"),), include_self=True)
    assert route(text="x", sender_uuid="u-helper", routing=own)[0] == {"u-helper"}
    without = RoutingRequest((Selector("name", "Helper"),))
    assert route(text="x", sender_uuid="u-helper", routing=without)[0] == set()


def test_observe_and_bot_reply_default() -> None:
    assert route(text="@Mantis", observe=True) == (set(), {"u-helper", "u-mantis", "u-prime"},
                                                   "observe")
    assert route(text="plain", sender_uuid="u-mantis", default_to_driver=False)[0] == set()


@pytest.mark.parametrize("raw, message", [
    ("Helper", "routing must be an object"),
    ({"responders": "Helper"}, "responders must be a list"),
    ({"responders": [{"type": "role", "value": "x"}]}, "type must be"),
    ({"responders": [{"type": "name", "value": ""}]}, "value must be"),
    ({"responders": [], "mode": "maybe"}, "mode must be"),
    ({"responders": [], "include_self": "yes"}, "include_self"),
])
def test_malformed_routing_is_a_clear_error(raw: object, message: str) -> None:
    with pytest.raises(RoutingError, match=message):
        parse_routing(raw)


def test_parse_routing_reads_the_documented_example() -> None:
    parsed = parse_routing({"responders": [{"type": "name", "value": "DBA"}],
                            "mode": "required", "reason": "deadlock", "include_self": False})
    assert parsed == RoutingRequest((Selector("name", "DBA"),), "required", "deadlock", False)
    assert parse_routing(None) is None


def _utterance() -> Utterance:
    return Utterance("hi", 5, "alice", {"source": "webchat"}, "grp:channel_webchat_0a1b2c3d",
                     "grp", "Ops", ("Helper", "alice"), "alice", ("Helper",))


@pytest.mark.parametrize("version, key", [(1, "grp"), (2, "grp"),
                                          (3, "grp:channel_webchat_0a1b2c3d")])
def test_chat_params_session_key_per_version(version: int, key: str) -> None:
    params = chat_params(_utterance(), version=version, recipient="Helper", mentioned=True,
                         is_sender=False, timeout_ms=1000)
    assert params["session_key"] == key
    assert params["bcs_session_id"] == "grp:channel_webchat_0a1b2c3d"
    text = params["message"]["content"][0]["text"]
    assert (text != "hi") == (version == 2)
    assert params["session_context"]["you_are_mentioned"] is True


def test_inject_params_have_no_timeout() -> None:
    params = chat_params(_utterance(), version=3, recipient="Mantis", mentioned=False,
                         is_sender=False, timeout_ms=None)
    assert "timeout_ms" not in params


def test_message_text_is_lenient() -> None:
    assert message_text({"content": [{"type": "text", "text": "a"}, {"type": "image"},
                                     {"type": "text", "text": "b"}]}) == "ab"
    assert message_text({"content": "plain"}) == "plain"
    assert message_text(None) == "" and message_text({"content": 3}) == ""
