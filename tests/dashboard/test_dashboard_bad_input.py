"""Issue 31 item 6 for the dashboard: whatever reaches sign-in or the JSON API — any headers,
any body, signed in or not — the answer is never a 5xx and the log stays bounded.

A running bridge (embedded hub, demo bots) over real HTTP; the requests are drawn by
Hypothesis, derandomized (tests/support/fuzz_http.py), so a failure repeats.
"""

from __future__ import annotations

import json
import logging
from urllib.parse import quote

import aiohttp
import pytest
import yarl
from hypothesis import strategies as st

from bridge.dashboard.auth import CSRF_HEADER
from tests.dashboard import test_dashboard_api as api
from tests.dashboard.test_dashboard_api import TOKEN, Operator
from tests.e2e.e2e_support import System
from tests.support.fuzz_http import (
    FIXED_BODIES,
    HEADER_TEXT,
    bodies,
    draw,
    header_values,
    json_values,
    loud_lines,
    send_each,
)

# the running bridge and its signed-in operator, as the API tests have them
system = api.system
operator = api.operator
_testchat_registered = api._testchat_registered

LOGGERS = ("bridge.dashboard", "bridge.web", "bridge.core.operator")
FORM = "application/x-www-form-urlencoded"
CONTENT_TYPES = st.one_of(
    st.sampled_from([FORM, "multipart/form-data", "multipart/form-data; boundary=xyz",
                     "application/json", "text/plain", "application/json; charset=latin-1",
                     FORM + "; charset=utf-16", FORM + "; charset=no-such-charset"]),
    header_values,
)
form_bodies = st.one_of(
    st.dictionaries(st.sampled_from(["token", "operator", "x"]), st.text(max_size=40),
                    max_size=3).map(lambda form: "&".join(
                        f"{quote(k)}={quote(v, safe='')}" for k, v in form.items()).encode()),
    st.sampled_from([b"token=%ff%fe&operator=%ff", b"token=" + b"%" * 300, b"token&token&=",
                     b"operator=" + b"x" * 5000, b"token=%00", b"=" * 100]),
)
"""Forms as a browser posts them, and forms no browser would post (bad percent-escapes,
invalid UTF-8, keys without values)."""

API_GETS = ("/dashboard/api/session", "/dashboard/api/overview", "/dashboard/api/conversations")
ACTIONS = ("/dashboard/api/lanes/release", "/dashboard/api/bindings/pause",
           "/dashboard/api/bindings/resume", "/dashboard/api/conversations/{id}/cancel",
           "/dashboard/logout")
action_bodies = st.one_of(
    bodies,
    st.fixed_dictionaries({}, optional={"binding": json_values, "lane": json_values,
                                        "reason": json_values, "until": json_values}
                          ).map(lambda body: json.dumps(body).encode()),
)


def _url(system: System, path: str) -> yarl.URL:
    assert system.app.web is not None
    return yarl.URL(system.app.web.url).with_path(path)


async def test_fuzzed_sign_ins_never_get_a_5xx_and_log_a_bounded_number_of_lines(
    system: System, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    dashboard = system.app.dashboard
    assert dashboard is not None
    dashboard.throttle.failures = 10**6  # every request reaches the form's parser
    cases = draw(st.tuples(CONTENT_TYPES, header_values, form_bodies | bodies), 200)
    requests = [({"Content-Type": kind, "Origin": origin}, body)
                for kind, origin, body in cases]
    requests += [({"Content-Type": kind}, body) for kind, _, body in cases[:60]]

    async with aiohttp.ClientSession() as http:
        answers = await send_each(http, "POST", _url(system, "/dashboard/login"), requests)
        # and still, the operator signs in
        async with http.post(_url(system, "/dashboard/login"),
                             data={"token": TOKEN, "operator": "Grace"},
                             allow_redirects=False) as response:
            assert response.status == 303

    assert answers.server_errors() == []
    assert [status for status, _ in answers.statuses if status < 400] == []  # none signed in
    loud = loud_lines(caplog.records, *LOGGERS)
    assert not [r for r in loud if r.levelno >= logging.ERROR or r.exc_info]
    assert len(loud) <= 3  # one line per kind of refusal: bounded, whatever the count


async def test_a_throttled_sign_in_costs_no_log_line_each(
    system: System, caplog: pytest.LogCaptureFixture
) -> None:
    """Past the throttle every guess is a 429; the log must not grow with them."""
    caplog.set_level(logging.DEBUG)
    guesses = [({"Content-Type": FORM}, f"token=guess-{n}&operator=M".encode())
               for n in range(60)]
    async with aiohttp.ClientSession() as http:
        answers = await send_each(http, "POST", _url(system, "/dashboard/login"), guesses)
    assert {status for status, _ in answers.statuses} == {401, 429}
    assert len(loud_lines(caplog.records, *LOGGERS)) <= 3


async def test_fuzzed_api_requests_never_get_a_5xx(
    system: System, operator: Operator, caplog: pytest.LogCaptureFixture
) -> None:
    """Signed in, with or without the CSRF header: any query, path id, header and body."""
    caplog.set_level(logging.DEBUG)
    http = operator.http
    answers = []
    queries = draw(st.dictionaries(st.sampled_from(["limit", "before", "state", "binding",
                                                    "q", "offset"]), HEADER_TEXT | header_values,
                                   max_size=3), 60)
    for query in queries:
        for path in API_GETS:
            async with http.get(_url(system, path), params=query) as response:
                await response.read()
                answers.append((response.status, (path, query)))
    ids = draw(HEADER_TEXT | header_values, 40)
    for request_id in ids:
        path = f"/dashboard/api/conversations/{quote(request_id, safe='')}"
        async with http.get(yarl.URL(system.app.web.url + path, encoded=True)) as response:
            await response.read()
            answers.append((response.status, (path, None)))

    cases = draw(st.tuples(st.sampled_from(ACTIONS), CONTENT_TYPES, st.booleans(),
                           HEADER_TEXT, action_bodies), 200)
    # and every action's JSON reader is given every fixed body, with the header it needs
    cases += [(action, "application/json", True, "x", body)
              for action in ACTIONS[:-1] for body in FIXED_BODIES]
    for action, kind, with_csrf, request_id, body in cases:
        path = action.replace("{id}", quote(request_id or "x", safe=""))
        headers = {"Content-Type": kind,
                   CSRF_HEADER: operator.csrf if with_csrf else request_id}
        got = await send_each(http, "POST", yarl.URL(system.app.web.url + path, encoded=True),
                              [(headers, body)])
        answers.extend(got.statuses)
        if action == "/dashboard/logout" and with_csrf:
            await operator.sign_in()  # signed out: sign in again for the next ones

    assert [(status, what) for status, what in answers if status >= 500] == []
    loud = loud_lines(caplog.records, *LOGGERS)
    assert not [r for r in loud if r.levelno >= logging.ERROR or r.exc_info]
