"""Issue 31 item 6 for the webchat's HTTP side: the page, its static files, the WebSocket
entry and the root — any method, path name, header and body is answered without a 5xx and
costs a bounded number of log lines; and the chat still works afterwards.

A real WebServer over real HTTP; the requests are drawn by Hypothesis, derandomized
(tests/support/fuzz_http.py), so a failure repeats. No request is a complete WebSocket
handshake (that would open a chat): the upgrade headers are fuzzed one by one.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
import yarl
from hypothesis import strategies as st
from webchat_clients import open_client

from tests.support.fuzz_http import HEADER_TEXT, bodies, draw, header_values, loud_lines, send_each

LOGGERS = ("adapters.webchat", "bridge.web")

UPGRADE_HEADERS = st.fixed_dictionaries({}, optional={
    "Upgrade": st.one_of(st.just("websocket"), header_values),
    "Connection": st.one_of(st.just("Upgrade"), st.just("keep-alive, Upgrade"), header_values),
    "Sec-WebSocket-Version": st.one_of(st.just("13"), header_values),
    "Sec-WebSocket-Key": header_values,
    "Sec-WebSocket-Protocol": header_values,
    "Sec-WebSocket-Extensions": st.one_of(
        st.just("permessage-deflate; client_max_window_bits=99"), header_values),
    "Origin": st.one_of(st.just("null"), header_values),
    "Cookie": header_values,
    "Accept-Encoding": header_values,
    "Range": st.one_of(st.just("bytes=99999-1"), header_values),
    "If-None-Match": header_values,
    "Content-Type": header_values,
})
"""A browser's headers, each one possibly wrong (every key fuzzed, none valid but by chance)."""


async def test_fuzzed_requests_to_every_webchat_route_never_get_a_5xx(
    start_webchat: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    webchat = await start_webchat()
    base = webchat.adapter.base
    root = yarl.URL(webchat.server.url)
    names = draw(HEADER_TEXT, 40)
    pages = ["/", base, base.rstrip("/"), f"{base}static/webchat.js",
             f"{base}static/webchat.css"]
    statics = [f"{base}static/{quote(name, safe='')}" for name in names if name]
    paths = st.one_of(st.just(webchat.adapter.ws_path), st.sampled_from(pages),
                      st.sampled_from(statics))  # the WebSocket entry a third of the time
    methods = st.sampled_from(["GET", "GET", "GET", "HEAD", "POST", "PUT", "OPTIONS"])
    cases = draw(st.tuples(methods, paths, UPGRADE_HEADERS,
                           st.one_of(st.just(b""), bodies)), 300)

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        answers = []
        for method, path, headers, body in cases:
            if method in ("GET", "HEAD") and headers.get("Sec-WebSocket-Key") is not None:
                headers = {**headers, "Sec-WebSocket-Key": headers["Sec-WebSocket-Key"] + "!"}
            url = root.with_path(path, encoded=True)
            answers += (await send_each(http, method, url, [(headers, body)])).statuses
        # and the chat still works for a browser
        page = await open_client(http, webchat.ws_url)
        await page.join("lobby", "Ada")
        await page.say("still here")
        assert (await webchat.inbound.get()).text == "still here"

    assert [(status, what) for status, what in answers if status >= 500] == []
    assert {status for status, _ in answers} - {200, 301, 302, 307, 308} <= {
        400, 403, 404, 405, 416, 426}  # every refusal a client error
    loud = loud_lines(caplog.records, *LOGGERS)
    assert not [r for r in loud if r.levelno >= logging.ERROR or r.exc_info]
    assert len(loud) <= 3  # one line per kind of refusal: bounded, whatever the count
