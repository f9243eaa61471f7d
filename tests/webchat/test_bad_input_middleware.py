"""The bad-input net turns a parser's failure into a 400, and leaves a bug a 500.

A `KeyError` or `TypeError` raised by the server's own code is a bug: it must keep its
traceback and its 500, not become the client's fault logged once at warning level.
"""

from __future__ import annotations

import logging

import aiohttp
import pytest
from aiohttp import web

from bridge.web.bad_input import BadInput, bad_input_middleware
from tests.fakes.local_server import serve_locally

RAISED = {
    "bad-input": BadInput("the body is not JSON"),
    "overflow": OverflowError("int too large to convert to float"),
    "recursion": RecursionError("maximum recursion depth exceeded"),
    "key": KeyError("binding"),
    "type": TypeError("'NoneType' object is not subscriptable"),
    "attribute": AttributeError("'NoneType' object has no attribute 'chat'"),
}


@pytest.fixture
async def url():
    async def handler(request: web.Request) -> web.Response:
        raise RAISED[request.match_info["kind"]]

    app = web.Application(middlewares=[bad_input_middleware("test")])
    app.router.add_get("/{kind}", handler)
    runner, root = await serve_locally(app)
    yield root
    await runner.cleanup()


@pytest.mark.parametrize(("kind", "status"), [
    ("bad-input", 400), ("overflow", 400), ("recursion", 400),
    ("key", 500), ("type", 500), ("attribute", 500),
])
async def test_a_parsers_failure_is_a_400_and_a_bug_stays_a_500(
    url: str, kind: str, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with aiohttp.ClientSession() as http:
        for _ in range(3):
            async with http.get(f"{url}/{kind}") as response:
                assert response.status == status
    tracebacks = [r for r in caplog.records if r.exc_info and r.levelno >= logging.ERROR]
    if status == 400:
        assert tracebacks == []
        assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
    else:
        assert len(tracebacks) == 3  # every bug keeps its traceback
