"""The dashboard's pure parts: sessions, the login throttle, names, quantiles, bot states."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.core.events import RelayEvent, RelayEvents
from bridge.core.relay_state import GroupBots
from bridge.dashboard.auth import LoginThrottle, SessionError, Sessions, operator_name
from bridge.dashboard.bots import BotActivity
from bridge.dashboard.traffic import quantile

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_session_lasts_its_lifetime_and_no_longer() -> None:
    clock = Clock()
    sessions = Sessions("t" * 20, lifetime=60, clock=clock)
    issued = sessions.issue("Ada")
    assert sessions.check(issued.cookie).operator == "Ada"
    clock.now += 59
    assert sessions.check(issued.cookie).csrf == issued.csrf
    clock.now += 1
    with pytest.raises(SessionError) as caught:
        sessions.check(issued.cookie)
    assert caught.value.expired


def test_another_token_or_a_changed_cookie_is_not_a_session() -> None:
    issued = Sessions("t" * 20, lifetime=60).issue("Ada")
    with pytest.raises(SessionError):
        Sessions("u" * 20, lifetime=60).check(issued.cookie)
    body, _, sig = issued.cookie.partition(".")
    forged_body = body[:-1] + ("A" if body[-1] != "A" else "B")
    for forged in (f"{forged_body}.{sig}", body, "", ".", "é.é", f"{body}.{sig}x"):
        with pytest.raises(SessionError):
            Sessions("t" * 20, lifetime=60).check(forged)


@given(st.text(max_size=200))
def test_any_cookie_text_is_refused_cleanly(text: str) -> None:
    with pytest.raises(SessionError):
        Sessions("t" * 20, lifetime=60).check(text)


def test_csrf_differs_per_session_and_must_match() -> None:
    sessions = Sessions("t" * 20, lifetime=60)
    one, two = sessions.issue("Ada"), sessions.issue("Ada")
    assert one.csrf != two.csrf
    assert Sessions.csrf_matches(one, one.csrf)
    assert not Sessions.csrf_matches(one, two.csrf)
    assert not Sessions.csrf_matches(one, None)
    assert not Sessions.csrf_matches(one, "")


def test_token_comparison() -> None:
    sessions = Sessions("t" * 20, lifetime=60)
    assert sessions.token_matches("t" * 20)
    assert not sessions.token_matches("t" * 19)
    assert not sessions.token_matches("\udcff")


@pytest.mark.parametrize(("raw", "name"), [
    ("Grace", "Grace"), ("  Grace Hopper ", "Grace Hopper"), ("", "operator"), (None, "operator"),
    ("Ada\n\u202eevil", "Adaevil"), ("x" * 100, "x" * 64), ("\x00\x1b[31m", "[31m"),
])
def test_operator_names_are_one_printable_line(raw: str | None, name: str) -> None:
    assert operator_name(raw) == name


def test_the_throttle_counts_failures_per_address_within_the_window() -> None:
    clock = Clock(0.0)
    throttle = LoginThrottle(failures=3, window=60, clock=clock)
    for _ in range(3):
        assert throttle.blocked("a") is None
        throttle.failed("a")
    assert throttle.blocked("a") == pytest.approx(60)
    assert throttle.blocked("b") is None
    clock.now = 61
    assert throttle.blocked("a") is None


def test_histogram_quantiles_interpolate_within_the_bucket() -> None:
    buckets = {0.25: 0.0, 0.5: 10.0, 1.0: 20.0, math.inf: 20.0}
    assert quantile(0.5, buckets) == pytest.approx(0.5)
    assert quantile(0.25, buckets) == pytest.approx(0.375)
    assert quantile(0.95, {0.25: 0.0, 1.0: 0.0, math.inf: 4.0}) == 1.0
    assert quantile(0.5, {0.25: 0.0, math.inf: 0.0}) is None
    assert quantile(0.5, {}) is None


def event(what: str, at: datetime, **data: object) -> RelayEvent:
    return RelayEvent(what, at, dict(data))  # type: ignore[arg-type]


def test_a_bot_that_goes_offline_while_replying_shows_as_dropped() -> None:
    activity = BotActivity()
    group = {"demo": GroupBots(("Echo", "Rules"), frozenset({"Echo", "Rules"}))}
    activity.see(event("output", T0, bot="Echo", kind="delta", run_id="r1"))
    rows = {row["name"]: row for row in activity.rows(group, T0)}
    assert rows["Echo"]["state"] == "replying" and rows["Rules"]["state"] == "idle"
    assert rows["Echo"]["last_activity"] == T0.isoformat()
    activity.see(event("participants", T0, group="demo", names=["Echo", "Rules"],
                       online=["Rules"]))
    gone = {"demo": GroupBots(("Echo", "Rules"), frozenset({"Rules"}))}
    rows = {row["name"]: row for row in activity.rows(gone, T0)}
    assert rows["Echo"]["state"] == "dropped" and "offline" in rows["Echo"]["note"]
    later = T0 + timedelta(minutes=11)
    assert {r["name"]: r["state"] for r in activity.rows(gone, later)}["Echo"] == "offline"


def test_the_hub_ending_a_run_for_a_lost_socket_shows_as_dropped() -> None:
    activity = BotActivity()
    group = {"demo": GroupBots(("Rules",), frozenset({"Rules"}))}
    activity.see(event("output", T0, bot="Rules", kind="error", run_id="r1",
                       error="Rules went offline mid-reply."))
    assert activity.rows(group, T0)[0]["state"] == "dropped"
    activity.see(event("output", T0, bot="Rules", kind="final", run_id="r2"))
    assert activity.rows(group, T0)[0]["state"] == "idle"


async def test_a_watcher_that_falls_behind_loses_old_events_not_the_relays_time() -> None:
    events = RelayEvents(lambda: T0)
    events.publish("inbound", n=0)  # nobody listens: nothing kept
    watcher = events.subscribe(maxsize=2)
    for n in range(5):
        events.publish("inbound", n=n)
    assert watcher.missed == 3
    assert [(await watcher.next()).data["n"] for _ in range(2)] == [3, 4]
    watcher.close()
    assert not events.watched
