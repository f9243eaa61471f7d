"""Bad input to an HTTP entry is the client's error: a 4xx and one throttled log line.

Every entry (Slack events and interactivity, the Telegram webhook, the hub's onboarding, the
dashboard, the webchat) parses what anyone on the network may send. Each entry checks its
own input, but a parser it relies on can still fail in a way nobody listed — a 400-digit
timestamp overflowing a float, a JSON body nested 100,000 deep — and aiohttp then answers
500 and logs a traceback for every such request, unthrottled. `bad_input_middleware` is the
net under all of them: an exception of the kinds a parser raises on bad input becomes 400
and a `RefusalLog` line (no traceback: the first says the exception and where it came
from). Anything else is a fault of the server and stays a 500.

`parse_json` is the one JSON body reader the entries share: it refuses non-JSON, non-UTF-8
and nesting deeper than `MAX_JSON_DEPTH` with `BadInput`, so no handler walks an
attacker's structure a hundred thousand levels deep.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from bridge import fastjson
from bridge.web.refusals import RefusalLog

log = logging.getLogger(__name__)

MAX_JSON_DEPTH = 64
"""Deepest JSON body accepted; platform payloads nest a dozen levels at most."""

INPUT_ERRORS: tuple[type[Exception], ...] = (
    ValueError,  # json, int(), UnicodeDecodeError, pydantic's ValidationError
    OverflowError,  # a number too large for a float
    RecursionError,  # a structure nested too deep for a recursive parser
)
"""What a parser raises on input it cannot read. Not `TypeError`, `KeyError`,
`AttributeError` or `IndexError`: those are what the server's own bugs raise, and a bug
must stay a 500 with its traceback, not become a client's 400 logged once. An entry that
reads fields of a client's structure checks them itself (and raises `BadInput`)."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class BadInput(ValueError):
    """The request cannot be read; the message says why and is safe to show the client."""


def parse_json(raw: bytes | str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value of a body, or `BadInput`. Read through `bridge.fastjson`, the one JSON
    door: its strings are valid Unicode (a lone surrogate reads as U+FFFD)."""
    try:
        value = fastjson.loads(raw)
    except RecursionError:
        raise BadInput(f"the JSON is nested deeper than {max_depth} levels") from None
    except ValueError:  # JSONDecodeError, and UnicodeDecodeError for bytes
        raise BadInput("the body is not JSON") from None
    if _depth_exceeds(value, max_depth):
        raise BadInput(f"the JSON is nested deeper than {max_depth} levels")
    return value


async def read_json(request: web.Request, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The request's JSON body (bounded by the app's `client_max_size`), or `BadInput`."""
    return parse_json(await request.read(), max_depth=max_depth)


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` nests deeper than `limit`; iterative, so depth costs no stack."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _origin(exc: BaseException) -> str:
    """Where an exception was raised, as `file:line`, for the one line that logs it."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "?"
    last = frames[-1]
    return f"{last.filename.rsplit('/', 1)[-1]}:{last.lineno}"


def bad_input_middleware(what: str) -> Callable[[web.Request, Handler], Awaitable[Any]]:
    """The middleware for one application (`what` names it in the log: ``web``, ``hub``)."""
    quiet_protocol_errors()
    logs: dict[str, RefusalLog] = {}

    @web.middleware
    async def bad_input(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPException:
            raise
        except INPUT_ERRORS as exc:
            if getattr(request.writer, "output_size", 0):
                raise  # the answer has begun (a WebSocket, a stream): too late for a 400
            resource = request.match_info.route.resource
            key = resource.canonical if resource is not None else "(no route)"
            refusals = logs.get(key)
            if refusals is None:
                refusals = logs[key] = RefusalLog(log, f"{what} {key}")
            detail = str(exc) if isinstance(exc, BadInput) else (
                f"input it could not read ({type(exc).__name__}: {exc} at {_origin(exc)})")
            refusals.refused(request.remote, detail, 400)
            message = str(exc) if isinstance(exc, BadInput) else "bad request"
            return web.json_response({"error": "bad_request", "message": message},
                                     status=400)

    return bad_input


class _ProtocolErrors(logging.Filter):
    """aiohttp's own refusals of a malformed request (a request line over 8 KiB, a broken
    header) come before any handler: it answers 400 but logs an ERROR with a traceback for
    each. This keeps the first as a warning line, later ones at debug, without traceback."""

    def __init__(self) -> None:
        super().__init__()
        self.refusals = RefusalLog(log, "HTTP server")

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError) and 400 <= (error.code or 0) < 500:
            self.refusals.refused(None, f"a malformed request ({type(error).__name__})",
                                  error.code)
            return False
        return True


_PROTOCOL_ERRORS = _ProtocolErrors()


def quiet_protocol_errors() -> None:
    """Install the filter on aiohttp's server log (once; both web apps call this)."""
    server_log = logging.getLogger("aiohttp.server")
    if _PROTOCOL_ERRORS not in server_log.filters:
        server_log.addFilter(_PROTOCOL_ERRORS)
