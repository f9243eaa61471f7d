"""Frame shapes of the BCN wire protocol: `req`, `res` and `event` JSON text frames.

Both `/ws/bot` and `/ws/channel` (the channel link) use these. Decoding is
strict about what a receiver needs to act on and lenient about everything else: unknown
fields are ignored so that newer peers stay compatible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bridge.bcn.errors import BcnError, ErrorCode
from bridge.fastjson import dumps, loads


@dataclass(slots=True)
class Request:
    id: str
    method: str
    params: dict[str, Any]


@dataclass(slots=True)
class Response:
    id: str | None
    ok: bool
    payload: dict[str, Any]
    error: BcnError | None


@dataclass(slots=True)
class Event:
    event: str
    payload: dict[str, Any]
    seq: int | None


Frame = Request | Response | Event


def encode_request(req_id: str, method: str, params: dict[str, Any]) -> str:
    return dumps({"type": "req", "id": req_id, "method": method, "params": params})


def encode_ok(req_id: str | None, payload: dict[str, Any]) -> str:
    return dumps({"type": "res", "id": req_id, "ok": True, "payload": payload})


def encode_error(req_id: str | None, error: BcnError) -> str:
    return dumps({"type": "res", "id": req_id, "ok": False, "error": error.to_payload()})


def encode_event(name: str, payload: dict[str, Any], seq: int) -> str:
    return dumps({"type": "event", "event": name, "payload": payload, "seq": seq})


class MalformedFrame(BcnError):
    """A frame the receiver cannot act on; carries the request id when one was readable."""

    def __init__(self, message: str, req_id: str | None = None) -> None:
        super().__init__(ErrorCode.INVALID_REQUEST, message)
        self.req_id = req_id


def decode_frame(text: str | bytes) -> Frame:
    """Turn one WebSocket text frame into a typed frame or raise `MalformedFrame`."""
    try:
        data = loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedFrame(f"frame is not valid JSON: {exc}") from None
    except RecursionError:  # e.g. 100k nested brackets: hostile, but only a bad frame
        raise MalformedFrame("frame is nested too deeply") from None
    if not isinstance(data, dict):
        raise MalformedFrame("frame must be a JSON object")
    kind = data.get("type")
    raw_id = data.get("id")
    req_id = str(raw_id) if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) else None
    if kind == "req":
        method = data.get("method")
        params = data.get("params", {})
        if req_id is None:
            raise MalformedFrame("req frame needs a string 'id'")
        if not isinstance(method, str) or not method:
            raise MalformedFrame("req frame needs a string 'method'", req_id)
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise MalformedFrame("'params' must be an object", req_id)
        return Request(req_id, method, params)
    if kind == "res":
        ok = data.get("ok") is True
        payload = data.get("payload")
        error = None if ok else BcnError.from_payload(data.get("error"))
        return Response(req_id, ok, payload if isinstance(payload, dict) else {}, error)
    if kind == "event":
        name = data.get("event")
        payload = data.get("payload", {})
        seq = data.get("seq")
        if not isinstance(name, str) or not name:
            raise MalformedFrame("event frame needs a string 'event'")
        if not isinstance(payload, dict):
            raise MalformedFrame("event 'payload' must be an object")
        return Event(name, payload, seq if isinstance(seq, int) else None)
    # Without a known type the id cannot be trusted to be a request id of the peer's:
    # the answer carries `id: null` (the channel link's transport rules).
    raise MalformedFrame("frame needs 'type' of req, res or event")
