"""The rules bot's brain: text in, reply text out, with the text protocol done right.

A REQUEST or HANDOFF addressed to this bot gets a canonical RESPONSE (same RequestId, next
depth) built with `bridge.protocol`; an ambiguous task gets a CLARIFY instead, remembered by
request id and by session so that either a protocol message with that RequestId or a plain
answer in the same session completes it. At the depth limit only a RESPONSE ever goes out.
Plain chat gets a short plain answer. No sockets and no clock here (`now` is passed in), so
every behaviour is unit-tested directly; `rules_bot.py` wires this to the SDK.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

from bridge.bcn.examples.skills import Answer, NeedsDetail, Skill, complete_detail, interpret
from bridge.protocol import (
    DEFAULT_DEPTH,
    Depth,
    MessageType,
    ProtocolMessage,
    build_clarify,
    build_response,
    escape_value,
    parse,
)

_REFERENCE = re.compile(r"^\s*re:\s*(\S+?):\s*(.*)$", re.IGNORECASE | re.DOTALL)
"""The protocol's inline answer to a CLARIFY: `Re: <RequestId>: <answer>`."""

_ANSWER_FIELDS = ("result", "task", "message", "context")


@dataclass(frozen=True, slots=True)
class PendingClarification:
    """A question this bot asked and is waiting on.

    `request` is the REQUEST/HANDOFF being clarified, or None when a human asked in plain
    words (then the final answer is plain words too).
    """

    skill: Skill
    session_key: str
    request: ProtocolMessage | None = None
    clarify_depth: Depth | None = None


class RulesBrain:
    def __init__(self, name: str, *, max_pending: int = 500) -> None:
        if not name or any(character.isspace() for character in name):
            raise ValueError(f"the rules bot needs a one-word name, got {name!r}")
        self.name = name
        self.max_pending = max_pending
        self._by_request: OrderedDict[str, PendingClarification] = OrderedDict()
        self._by_session: OrderedDict[str, PendingClarification] = OrderedDict()

    def pending(self, session_key: str) -> PendingClarification | None:
        return self._by_session.get(session_key)

    def reply(self, text: str, *, session_key: str, now: datetime) -> str:
        """The reply to one message; "" means this message is not for this bot."""
        message = parse(text)
        try:
            if message is None:
                return self._reply_plain(unescape_markdown(text), session_key, now)
            return self._reply_protocol(message, session_key, now)
        except ValueError as exc:  # e.g. a depth no builder will accept (max above the cap)
            return f"I cannot answer that in protocol form: {exc}"

    # ------------------------------------------------------------------ protocol
    def _reply_protocol(self, message: ProtocolMessage, session_key: str, now: datetime) -> str:
        if message.to.lstrip("@").lower() != self.name.lower():
            return ""
        pending = self._by_request.get(message.request_id or "")
        if pending is not None and self._from_the_one_asked(pending, message):
            detail = next((v for f in _ANSWER_FIELDS if (v := getattr(message, f))), "")
            return self._complete(pending, detail, message.depth)
        if message.type in (MessageType.REQUEST, MessageType.HANDOFF):
            return self._answer_request(message, session_key, now)
        return ""  # a RESPONSE or CLARIFY for nothing this bot asked; staying quiet ends loops

    @staticmethod
    def _from_the_one_asked(pending: PendingClarification, message: ProtocolMessage) -> bool:
        """Only the party the question went to answers it: another bot's message that
        happens to carry the same RequestId (an echo of someone's block, another chat's
        request) is not that answer."""
        if pending.request is None:
            return False
        asked = requester_of(pending.request).lstrip("@").casefold()
        return (message.from_ or "").lstrip("@").casefold() == asked

    def _answer_request(self, request: ProtocolMessage, session_key: str, now: datetime) -> str:
        depth = reply_depth(request.depth or DEFAULT_DEPTH)
        outcome = interpret(request.task or "", now)
        if isinstance(outcome, NeedsDetail):
            if depth.current >= depth.max:
                answer = Answer("failed", f"the task is ambiguous at the depth limit: "
                                          f"{outcome.question}")
                return self._response(request, answer, depth)
            assert request.request_id is not None  # the parser refuses a REQUEST without one
            self._remember(PendingClarification(outcome.skill, session_key, request, depth))
            return build_clarify(
                to=requester_of(request), from_=self.name, request_id=request.request_id,
                question=escape_value(outcome.question), depth=depth,
                options=list(outcome.options) or None,
            )
        return self._response(request, outcome, depth)

    def _response(self, request: ProtocolMessage, answer: Answer, depth: Depth) -> str:
        return build_response(
            to=requester_of(request), from_=self.name, request_id=request.request_id,
            status=answer.status, result=escape_value(answer.text), depth=depth,
            original_from=request.original_from,
        )

    # ------------------------------------------------------------------ plain words
    def _reply_plain(self, text: str, session_key: str, now: datetime) -> str:
        reference = _REFERENCE.match(text)
        if reference is not None and reference.group(1) in self._by_request:
            return self._complete(self._by_request[reference.group(1)], reference.group(2), None)
        pending = self._by_session.get(session_key)
        if pending is not None:
            return self._complete(pending, text, None)
        outcome = interpret(text, now)
        if isinstance(outcome, NeedsDetail):
            self._remember(PendingClarification(outcome.skill, session_key))
            return outcome.question
        return outcome.text

    # ------------------------------------------------------------------ clarifications
    def _complete(
        self, pending: PendingClarification, detail: str, answer_depth: Depth | None
    ) -> str:
        """Answer the clarified task; a protocol request gets its RESPONSE, a human words."""
        self._forget(pending)
        answer = complete_detail(pending.skill, detail)
        if pending.request is None:
            return answer.text
        if answer_depth is None:  # a plain answer is one hop after the CLARIFY
            assert pending.clarify_depth is not None
            answer_depth = reply_depth(pending.clarify_depth)
        return self._response(pending.request, answer, reply_depth(answer_depth))

    def _remember(self, pending: PendingClarification) -> None:
        previous = self._by_session.get(pending.session_key)
        if previous is not None:
            self._forget(previous)
        self._by_session[pending.session_key] = pending
        if pending.request is not None and pending.request.request_id:
            self._by_request[pending.request.request_id] = pending
        while len(self._by_session) > self.max_pending:
            self._forget(next(iter(self._by_session.values())))

    def _forget(self, pending: PendingClarification) -> None:
        if self._by_session.get(pending.session_key) is pending:
            del self._by_session[pending.session_key]
        request_id = pending.request.request_id if pending.request is not None else None
        if request_id and self._by_request.get(request_id) is pending:
            del self._by_request[request_id]


_MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def unescape_markdown(text: str) -> str:
    """Chat text reaches bots as Markdown, so a typed `6*7` may arrive as `6\\*7`."""
    return _MARKDOWN_ESCAPE.sub(r"\1", text)


def reply_depth(depth: Depth) -> Depth:
    """One hop further, but never past the limit: at the limit a RESPONSE keeps the depth."""
    return Depth(max(1, min(depth.current + 1, depth.max)), depth.max)


def requester_of(request: ProtocolMessage) -> str:
    """Who gets the answer: a HANDOFF's Callback bot when it names one, else the sender."""
    if request.type is MessageType.HANDOFF and request.callback:
        return request.callback.strip().lstrip("@") or request.from_
    return request.from_
