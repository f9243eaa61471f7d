"""Run events, the bot → BCN replies, in both wire forms: parsed (hub) and built (SDK).

- v1/v2: `chat.event` {`run_id`, `bcs_group_id`, `state`, `message`}. Streamed
  pieces may come as `delta_text` without a `message` (the BCN server's own clients do
  that), errors as `errorMessage`/`errorCode`; a legacy `agent` event with
  `stream: "error"` ends its run.
- v3: `chat` / `agent` with the common envelope `runId`, `sessionId`, `seq` (strictly
  increasing per run; the frame's own `seq` must equal it), `ts` (epoch ms). `chat` has a
  `state` and `content` (the piece for a delta, the whole reply for a final), `deltaText`,
  `stopReason`, `errorMessage`, `errorCode`, `routing`; `agent` has a `stream` (`tool`
  with `phase` start/update/result, `thinking`, `assistant`, `error`, `approval`,
  `lifecycle`, `phase`). `agent`/`error` ends the run; the other streams are activity.
  The v3 parser is fail-closed, as the server's is: a malformed known event is an error,
  never a guess at the legacy shape. Which parser applies is decided by the negotiated
  version alone, never by looking at the payload.

Pure functions over plain data, so every rule is tested without a socket.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from bridge.fastjson import dumps

TERMINAL_STATES = frozenset({"final", "error", "aborted"})
CHAT_STATES = frozenset({"delta", *TERMINAL_STATES})
AGENT_STREAMS = frozenset({"tool", "thinking", "assistant", "error", "approval", "lifecycle",
                           "phase"})
TOOL_PHASES = frozenset({"start", "update", "result"})
ACTIVITY = "activity"
"""The state of events that are part of a run but not shown (tool calls, thinking)."""


class RunEventError(ValueError):
    """A run event that cannot be accepted; the message says why (sent back to the bot)."""


@dataclass(frozen=True, slots=True)
class RunEvent:
    run_id: str
    state: str
    """`delta`, `final`, `error`, `aborted`, or `activity`."""
    text: str = ""
    session_id: str | None = None
    seq: int | None = None
    routing: Any = None

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


def content_text(content: Any) -> str:
    """The text of a message `content`: a string, or its text parts joined (lenient)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [part.get("text") for part in content
             if isinstance(part, dict) and part.get("type", "text") == "text"]
    return "".join(part for part in parts if isinstance(part, str))


def message_text(message: Any) -> str:
    """The text of a v1/v2 `message` object; '' for anything else."""
    return content_text(message.get("content")) if isinstance(message, dict) else ""


def _text(payload: dict[str, Any], *keys: str) -> str:
    """The first key holding a non-empty string."""
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _error_text(payload: dict[str, Any]) -> str:
    text = message_text(payload.get("message")) or _text(payload, "errorMessage", "content")
    if text:
        return text
    code = _text(payload, "errorCode")
    return f"error {code}" if code else ""


# ---------------------------------------------------------------------- v1 / v2
def parse_legacy(name: str, payload: dict[str, Any]) -> RunEvent | None:
    """A v1/v2 event, or None for an event that is not part of a run (or unreadable)."""
    run_id = payload.get("run_id")
    if not isinstance(run_id, str) or not run_id:
        return None
    if name == "agent":
        stream = payload.get("stream")
        if stream == "error":
            return RunEvent(run_id, "error", _error_text(payload))
        return RunEvent(run_id, ACTIVITY) if isinstance(stream, str) else None
    if name != "chat.event":
        return None
    state = payload.get("state")
    if not isinstance(state, str):
        return None
    if state == "delta":
        delta = payload.get("delta_text")
        text = delta if isinstance(delta, str) else message_text(payload.get("message"))
        return RunEvent(run_id, "delta", text)
    if state == "error":
        return RunEvent(run_id, "error", _error_text(payload))
    if state in TERMINAL_STATES:
        return RunEvent(run_id, state, message_text(payload.get("message")),
                        routing=payload.get("routing"))
    if state.startswith("tool_call_"):
        return RunEvent(run_id, ACTIVITY)
    return None


# ---------------------------------------------------------------------- v3
def _required_text(payload: dict[str, Any], key: str) -> str:
    value = payload.get(key)
    if not isinstance(value, str) or not value.strip():
        raise RunEventError(f"V3 run event needs a non-empty string {key!r}")
    return value


def _required_count(payload: dict[str, Any], key: str) -> int:
    value = payload.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RunEventError(f"V3 run event needs a non-negative integer {key!r}")
    return value


def parse_v3(name: str, payload: dict[str, Any], outer_seq: int | None) -> RunEvent:
    """A v3 `chat` / `agent` event; raises `RunEventError` for anything else."""
    if name == "interaction":
        raise RunEventError("interaction events are not served on this BCN")
    if name not in ("chat", "agent"):
        raise RunEventError(f"unsupported V3 run event {name!r} (v3 sends 'chat' and 'agent')")
    run_id = _required_text(payload, "runId")
    session_id = _required_text(payload, "sessionId")
    seq = _required_count(payload, "seq")
    _required_count(payload, "ts")
    if outer_seq is not None and outer_seq != seq:
        raise RunEventError("V3 frame seq does not match payload seq")
    if name == "chat":
        return _v3_chat(run_id, session_id, seq, payload)
    return _v3_agent(run_id, session_id, seq, payload)


def _v3_chat(run_id: str, session_id: str, seq: int, payload: dict[str, Any]) -> RunEvent:
    state = payload.get("state")
    if state not in CHAT_STATES:
        raise RunEventError("V3 chat event needs a state of delta, final, error or aborted")
    if state == "delta":
        text = _text(payload, "deltaText", "content")
    elif state == "final":
        content = payload.get("content")
        text = content if isinstance(content, str) else message_text(payload.get("message"))
    elif state == "error":
        text = _error_text(payload)
    else:
        text = ""
    return RunEvent(run_id, state, text, session_id, seq, payload.get("routing"))


def _v3_agent(run_id: str, session_id: str, seq: int, payload: dict[str, Any]) -> RunEvent:
    stream = payload.get("stream")
    if stream not in AGENT_STREAMS:
        raise RunEventError(f"unknown V3 agent stream {stream!r}")
    if stream == "error":
        return RunEvent(run_id, "error", _error_text(payload), session_id, seq)
    if stream == "tool":
        if not (_text(payload, "name") or _text(payload, "toolName")).strip():
            raise RunEventError("V3 tool event needs 'name' (or 'toolName')")
        if not _text(payload, "toolCallId").strip():
            raise RunEventError("V3 tool event needs 'toolCallId'")
        phase = payload.get("phase")
        if phase not in TOOL_PHASES:
            raise RunEventError("V3 tool event needs a phase of start, update or result")
        if phase == "result" and ("result" not in payload
                                  or not isinstance(payload.get("isError"), bool)):
            raise RunEventError("V3 tool result needs 'result' and a boolean 'isError'")
    return RunEvent(run_id, ACTIVITY, "", session_id, seq)


def fingerprint(name: str, payload: dict[str, Any]) -> str:
    """What makes a terminal event a replay of itself (same event, same payload)."""
    return dumps([name, payload], default=str, sort_keys=True)


# ---------------------------------------------------------------------- building (SDK)
def now_ms() -> int:
    return int(time.time() * 1000)


def v3_payload(run_id: str, session_id: str, seq: int, **fields: Any) -> dict[str, Any]:
    """A v3 run event payload: the common envelope plus `fields` (None ones left out).

    `chat` events pass `state=` (and `content`, `stopReason`, …), `agent` events
    `stream=` (and `phase`, `toolCallId`, `name`, …).
    """
    payload: dict[str, Any] = {"runId": run_id, "sessionId": session_id, "seq": seq,
                               "ts": now_ms()}
    payload.update({key: value for key, value in fields.items() if value is not None})
    return payload
