"""How a run's events look on the wire: the v1/v2 `chat.event` or the v3 run events.

A `Run` says *what* happened (a delta, a tool call, the final); the dialect chosen for
its connection says how to write it. The choice follows what `bot.connect` negotiated
(`bridge.bcn.versions.speaks_run_events`), never a guess.
"""

from __future__ import annotations

import itertools
from typing import Any, Protocol

from bridge.bcn.bot.message import assistant_message
from bridge.bcn.run_events import v3_payload

WireEvent = tuple[str, dict[str, Any], int | None]
"""Event name, payload, and the frame `seq` to stamp (None: the connection's own)."""


class Dialect(Protocol):
    def chat(self, state: str, text: str | None = None, **extra: Any) -> WireEvent: ...

    def tool(self, phase: str, tool_call_id: str, tool_name: str, **data: Any) -> WireEvent: ...


class LegacyDialect:
    """v1/v2: `chat.event` {`run_id`, `bcs_group_id`, `state`, `message`, …}."""

    def __init__(self, run_id: str, bcs_group_id: str) -> None:
        self.run_id = run_id
        self.bcs_group_id = bcs_group_id

    def chat(self, state: str, text: str | None = None, **extra: Any) -> WireEvent:
        payload: dict[str, Any] = {"run_id": self.run_id, "bcs_group_id": self.bcs_group_id,
                                   "state": state}
        if text is not None:
            payload["message"] = assistant_message(text)
        if extra.get("stop_reason") is not None:
            payload["stop_reason"] = extra["stop_reason"]
        for key in ("routing", "usage"):
            if extra.get(key) is not None:
                payload[key] = extra[key]
        return "chat.event", payload, None

    def tool(self, phase: str, tool_call_id: str, tool_name: str, **data: Any) -> WireEvent:
        payload: dict[str, Any] = {"run_id": self.run_id, "bcs_group_id": self.bcs_group_id,
                                   "state": "tool_call_start" if phase == "start"
                                   else "tool_call_end",
                                   "tool_call_id": tool_call_id, "tool_name": tool_name}
        if phase == "start":
            payload["args"] = data.get("args") or {}
        else:
            payload["result"] = data.get("result")
            payload["success"] = data.get("success", True)
        return "chat.event", payload, None


class UnifiedDialect:
    """v3: `chat` / `agent` with `runId`, `sessionId`, a per-run `seq` and `ts`."""

    def __init__(self, run_id: str, session_id: str) -> None:
        self.run_id = run_id
        self.session_id = session_id
        self._seq = itertools.count(1)

    def chat(self, state: str, text: str | None = None, **extra: Any) -> WireEvent:
        seq = next(self._seq)
        fields: dict[str, Any] = {"content": text, "stopReason": extra.get("stop_reason"),
                                  "usage": extra.get("usage"), "routing": extra.get("routing")}
        if state == "error":
            fields["content"] = None
            fields["errorMessage"] = text
            fields["errorCode"] = "BOT_ERROR"
        return "chat", v3_payload(self.run_id, self.session_id, seq, state=state, **fields), seq

    def tool(self, phase: str, tool_call_id: str, tool_name: str, **data: Any) -> WireEvent:
        seq = next(self._seq)
        fields: dict[str, Any] = {"phase": "start" if phase == "start" else "result",
                                  "toolCallId": tool_call_id, "name": tool_name}
        if phase == "start":
            fields["args"] = data.get("args") or {}
        else:
            result = data.get("result")
            fields["result"] = {} if result is None else result
            fields["isError"] = not data.get("success", True)
        return "agent", v3_payload(self.run_id, self.session_id, seq, stream="tool",
                                   **fields), seq
