"""One answer in progress: the handle a message handler streams its reply through.

A run follows BCN's run state machine: any number of `delta`s (and optional tool
call reports), then exactly one terminal event — `final`, `error` or `aborted`. Once BCN has
aborted the run, everything the handler still sends is dropped silently, so a handler that
is slow to notice its cancellation cannot leak late output. How each event is
written (v1/v2 `chat.event` or v3 `chat` / `agent`) is the `Dialect`'s business.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from enum import StrEnum
from typing import Any

from bridge.bcn.bot.dialect import Dialect, LegacyDialect
from bridge.bcn.limits import check_fits
from bridge.protocol import (
    DEFAULT_DEPTH,
    MessageType,
    ProtocolMessage,
    build_clarify,
    escape_value,
    next_depth,
)

log = logging.getLogger(__name__)

Emit = Callable[[str, dict[str, Any], int | None], Awaitable[object]]
"""Sends one event (name, payload, frame seq or None) on the bot's current connection."""

FinalListener = Callable[["Run", str], None]
"""Told about each final reply, so the bot can add it to its history."""


class RunState(StrEnum):
    RUNNING = "running"
    FINAL = "final"
    ERROR = "error"
    ABORTED = "aborted"


class RunFinished(RuntimeError):
    """The handler tried to send on a run that already ended with `final` or `error`."""


class Run:
    def __init__(
        self,
        run_id: str,
        *,
        session_key: str,
        bcs_group_id: str,
        emit: Emit,
        on_final: FinalListener | None = None,
        dialect: Dialect | None = None,
        bot_name: str | None = None,
    ) -> None:
        self.run_id = run_id
        self.bot_name = bot_name
        """The answering bot's name: the `From` of a protocol message it sends."""
        self.session_key = session_key
        self.bcs_group_id = bcs_group_id
        self.state = RunState.RUNNING
        self._emit = emit
        self._dialect = dialect or LegacyDialect(run_id, bcs_group_id)
        self._on_final = on_final
        self._streamed: list[str] = []

    def __repr__(self) -> str:
        return f"Run({self.run_id!r}, session_key={self.session_key!r}, state={self.state})"

    @property
    def finished(self) -> bool:
        return self.state is not RunState.RUNNING

    @property
    def aborted(self) -> bool:
        return self.state is RunState.ABORTED

    @property
    def streamed_text(self) -> str:
        """Everything sent as deltas so far, joined."""
        return "".join(self._streamed)

    # ------------------------------------------------------------------ streaming
    async def delta(self, text: str) -> None:
        """Send the next piece of the reply (just the new piece, not the text so far)."""
        if await self._send("delta", text):
            self._streamed.append(text)

    async def tool_call_start(
        self, tool_call_id: str, tool_name: str, args: dict[str, Any] | None = None
    ) -> None:
        await self._send_tool("start", tool_call_id, tool_name, args=args or {})

    async def tool_call_end(
        self,
        tool_call_id: str,
        tool_name: str,
        result: Any = None,
        *,
        success: bool = True,
    ) -> None:
        await self._send_tool("end", tool_call_id, tool_name, result=result, success=success)

    # ------------------------------------------------------------------ endings
    async def final(
        self,
        text: str,
        *,
        routing: dict[str, Any] | None = None,
        usage: dict[str, Any] | None = None,
        stop_reason: str = "complete",
    ) -> None:
        """End the run with the complete reply; `routing` picks who answers next."""
        sent = await self._send("final", text, ending=RunState.FINAL, routing=routing,
                                usage=usage, stop_reason=stop_reason)
        if sent and self._on_final:
            self._on_final(self, text)

    async def clarify(
        self,
        request: ProtocolMessage | None,
        question: str,
        *,
        options: Iterable[str] | None = None,
        to: str | None = None,
        from_: str | None = None,
        routing: dict[str, Any] | None = None,
    ) -> str:
        """End the run with a CLARIFY: ask whoever sent `request` `question` before answering.

        `request` is the protocol message being answered (`msg.protocol`); the CLARIFY goes
        to its sender (a HANDOFF's `Callback` bot when it names one) unless `to` says
        otherwise, from this bot (`from_` overrides), with the same RequestId, one hop
        deeper. `question` is passed through `escape_value`, so any text is safe. `options`
        (at most 10 one-line choices of at most 80 characters) become `Options: A | B`,
        which the bridge shows as buttons; a person can still answer in their own words.
        Returns the text sent. A CLARIFY that cannot be built (plain chat, the depth limit,
        a bad choice) raises `ValueError` before anything is sent: the run goes on.
        """
        if request is None:
            raise ValueError("clarify needs the protocol message it asks about "
                             "(msg.protocol is None for plain chat: ask in plain words)")
        sender = from_ or self.bot_name
        if not sender:
            raise ValueError("clarify needs from_= (this bot has no name)")
        text = build_clarify(
            to=to or _requester(request),
            from_=sender,
            request_id=request.request_id,
            question=escape_value(question) if isinstance(question, str) else question,
            depth=next_depth(request.depth or DEFAULT_DEPTH),
            options=options,
        )
        await self.final(text, routing=routing)
        return text

    async def error(self, text: str) -> None:
        """End the run as failed, with a short message the humans will see."""
        await self._send("error", text, ending=RunState.ERROR)

    def _may_send(self, what: str) -> bool:
        """False when the run was aborted (output is dropped); raises once it ended."""
        if self.state is RunState.ABORTED:
            log.debug("run %s: dropping %s after abort", self.run_id, what)
            return False
        if self.finished:
            raise RunFinished(f"run {self.run_id} already ended with {self.state}; "
                              f"cannot send {what}")
        return True

    async def _send(
        self, state: str, text: str, *, ending: RunState | None = None, **extra: Any
    ) -> bool:
        """Emit one chat event; False when it was dropped because the run was aborted."""
        if not self._may_send(state):
            return False
        check_fits(f"the {state}", text)  # before the state moves: the run may still fail
        if ending is not None:
            self.state = ending
        await self._emit(*self._dialect.chat(state, text, **extra))
        return True

    async def _send_tool(self, phase: str, tool_call_id: str, tool_name: str,
                         **data: Any) -> None:
        if self._may_send(f"tool call {phase}"):
            await self._emit(*self._dialect.tool(phase, tool_call_id, tool_name, **data))

    # ------------------------------------------------------------------ used by the Bot
    def mark_aborted(self) -> bool:
        """Move to ABORTED, suppressing all later output; False if it had already ended."""
        if self.finished:
            return False
        self.state = RunState.ABORTED
        return True

    async def announce_aborted(self) -> None:
        """Send the terminal `aborted` event once the handler has stopped."""
        await self._emit(*self._dialect.chat("aborted", None, stop_reason="aborted"))


def _requester(request: ProtocolMessage) -> str:
    """Who a reply to `request` goes to: a HANDOFF's Callback bot when it names one."""
    if request.type is MessageType.HANDOFF and request.callback:
        return request.callback.strip().lstrip("@") or request.from_
    return request.from_
