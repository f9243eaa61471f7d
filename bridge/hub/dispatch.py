"""The hub's switchboard: human messages to bots, bot replies to chats and to other bots.

One message, followed end to end:
  link `channel.inbound` → `Dispatcher.inbound` (session, idempotency, routing) →
  `chat.send`/`chat.inject` to online bots → bot ACK (run → session, `runs.py`) →
  bot run event (checked in `bot_events.py`) → `Dispatcher.run_event` → `channel.deliver`
  via the binding's outbox, and a final is routed on to the session's other bots
  (ping-pong guarded). A delivery that yields no run (refused, lost, a reused run id)
  is reported to the chat, so no message disappears without a word.

During the reconnect grace after a start, a human message for a bot that was online before
and is not back yet is held (`held_messages.py`) and routed by `route_human` once it is.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import logging
import secrets
import time
from dataclasses import replace
from typing import Any

from bridge.bcn.errors import BcnError, ConnectionClosed, ErrorCode
from bridge.bcn.limits import MAX_FORWARDED_CHARS, forwardable
from bridge.bcn.run_events import RunEvent
from bridge.bcn.send_queue import SendQueueFull
from bridge.hub.bindings import BindingSpec, scope_key
from bridge.hub.bot_messages import Utterance, chat_params
from bridge.hub.deliveries import Delivery
from bridge.hub.held_messages import HeldMessages, HumanMessage
from bridge.hub.routing import (
    Participant,
    RouteDecision,
    RoutingError,
    RoutingRequest,
    Selector,
    decide_route,
    parse_routing,
)
from bridge.hub.runs import PendingSend, Run
from bridge.hub.sessions import ChannelSession
from bridge.hub.state import BotLink, HubState, LinkSession

log = logging.getLogger(__name__)

NO_BOT_TEXT = "No bot is available to answer right now."
MAX_TEXT_CHARS = 200_000
"""Longest inbound text, and the most of a run's streamed text the hub keeps."""
SYSTEM_SENDER = {"bot_uuid": None, "name": "BCN"}
PSEUDONYMS_KEPT = 10_000
"""Pseudonyms remembered (all forgotten at once when full: they are cheap to make again)."""


def now_ms() -> int:
    return int(time.time() * 1000)


def invalid(message: str) -> BcnError:
    return BcnError(ErrorCode.INVALID_REQUEST, message)


def _ignore_answer(answer: asyncio.Future[Any]) -> None:
    """chat.inject answers carry nothing; read them so no error goes unretrieved."""
    if not answer.cancelled() and answer.exception() is not None:
        log.debug("chat.inject not acknowledged: %s", answer.exception())


class Dispatcher:
    def __init__(self, state: HubState) -> None:
        self.state = state
        self._event_ids = itertools.count(1)
        self._event_prefix = secrets.token_hex(4)
        self._pseudonyms: dict[str, str] = {}
        self._send_prefix = secrets.token_hex(8)
        self._send_numbers = itertools.count(1)
        """A chat.send's idempotency key is this process's random prefix and a count:
        unique across restarts (the prefix) without a system call per message."""
        self.stopping = False
        """Set while the hub shuts down: lost deliveries are not reported then."""
        self.held = HeldMessages(state.db, state.grace, state.config.held_max_per_binding,
                                 self.route_human)

    # ------------------------------------------------------------------ human → bots
    async def inbound(self, link: LinkSession, params: dict[str, Any]) -> dict[str, Any]:
        spec = self.claimed_binding(link, params)
        msg_id = _optional_id(params, "msg_id")
        thread_id = _optional_id(params, "thread_id")
        sender = params.get("sender") or {}
        if not isinstance(sender, dict):
            raise invalid("sender must be an object")
        user_id = _optional_id(sender, "user_id") or "unknown"
        name = sender.get("name") if isinstance(sender.get("name"), str) else user_id
        is_bot = sender.get("is_bot") is True
        text = params.get("text", "")
        if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS:
            raise invalid(f"text must be a string of at most {MAX_TEXT_CHARS} characters")
        mentions = params.get("mentions") or []
        if not isinstance(mentions, list) or not all(isinstance(m, str) for m in mentions):
            raise invalid("mentions must be a list of names")
        deliver = params.get("deliver") or "auto"
        if deliver not in ("auto", "observe"):
            raise invalid("deliver must be 'auto' or 'observe'")
        try:
            parse_routing(params.get("routing"))  # refused now; parsed again when routed
        except RoutingError as exc:
            raise invalid(str(exc)) from None
        protocol = params.get("protocol")

        group = self.state.groups.get(spec.group_id)
        if group is None:
            raise BcnError(ErrorCode.NOT_FOUND, f"group {spec.group_id!r} no longer exists")
        if msg_id is not None:
            first = self.state.sessions.seen(spec.binding_id, msg_id)
            if first is not None:
                return _inbound_payload(first, False, [], duplicate=True)
        session, is_new = self.state.sessions.resolve(
            spec.binding_id, scope_key(spec, thread_id, user_id), group.id, spec.channel_type
        )
        if msg_id is not None:
            self.state.sessions.accept(spec.binding_id, msg_id, session)

        timestamp = now_ms()
        channel: dict[str, Any] = {
            "source": spec.channel_type,
            "conversation_id": spec.conversation_id,
            "thread_id": thread_id,
            "message_id": msg_id,
            "is_bot": is_bot,
        }
        if spec.identity_forwarding:
            author = name
            channel.update(identity_forwarding=True, user_id=user_id, actor_name=name)
        else:
            author = self.pseudonym(spec, user_id)
            channel["user_id"] = author
        for key in ("attachments", "reply_to_msg_id"):
            if params.get(key):
                channel[key] = params[key]
        if not is_bot:
            session.human_spoke(author)
        self.state.sessions.record(session, "user", name, text, timestamp,
                                   protocol=protocol if isinstance(protocol, dict) else None)
        if isinstance(protocol, dict):
            log.info("session %s: protocol %s %s", session.id, protocol.get("type"),
                     protocol.get("request_id"))
        message = HumanMessage(
            session, thread_id, msg_id, author, channel, text, list(mentions),
            params.get("routing"), deliver == "observe",
            protocol if isinstance(protocol, dict) else None, timestamp,
        )
        awaited = self._awaited_responders(message)
        if awaited is not None and self.held.hold(message, awaited):
            payload = _inbound_payload(session, is_new, [], duplicate=False)
            payload["held"] = True
            payload["waiting_for"] = sorted(self._name_of(bot_uuid) for bot_uuid in awaited)
        else:
            deliveries = await self.route_human(message)
            payload = _inbound_payload(session, is_new, deliveries, duplicate=False)
        await self.state.db.writes.flush()  # what the answer confirms is on disk
        return payload

    def _awaited_responders(self, message: HumanMessage) -> frozenset[str] | None:
        """The reconnecting bots a message must wait for; None when it need not wait.

        It waits when a bot it would be sent to (were every member online) is one the
        reconnect grace awaits, or when earlier messages of its binding wait already.
        """
        session = message.session
        holding = self.held.holding(session.binding_id)
        if not holding and not self.state.grace.active:
            return None
        group = self.state.groups.get(session.group_id)
        if group is None or message.observe:
            return frozenset() if holding else None
        everyone = [Participant(p.bot_uuid, p.name, True) for p in self.state.participants(group)]
        decision = decide_route(
            everyone, driver_uuid=self.state.groups.driver_uuid(group), text=message.text,
            mentions=message.mentions, routing=parse_routing(message.routing),
        )
        awaited = frozenset(b for b in decision.send if self.state.grace.awaits(b))
        return awaited if awaited or holding else None

    async def route_human(self, message: HumanMessage) -> list[dict[str, Any]]:
        """Route an accepted human message to the group's bots as they are online now."""
        session = message.session
        group = self.state.groups.get(session.group_id)
        if group is None:
            log.warning("session %s: group %s no longer exists; message %s not routed",
                        session.id, session.group_id, message.msg_id)
            return []
        routing = parse_routing(message.routing)
        participants = self.state.participants(group)
        decision = decide_route(
            participants,
            driver_uuid=self.state.groups.driver_uuid(group),
            text=message.text,
            mentions=message.mentions,
            routing=routing,
            observe=message.observe,
        )
        utterance = Utterance(
            message.text, message.timestamp, message.author, message.channel, session.id,
            group.id, group.name,
            tuple([*(p.name for p in participants), *session.humans]), session.originator,
            tuple(p.name for p in participants if p.bot_uuid in decision.addressed),
            routing.reason if routing else "",
            {"protocol": message.protocol} if message.protocol is not None else {},
            group.type,
        )
        refused: list[str] = []
        deliveries = await self._deliver(session, decision, utterance, None, message.msg_id,
                                         message.thread_id, refused=refused,
                                         from_person=not message.channel.get("is_bot"))
        if not message.observe and not refused and not any(
            d["method"] == "chat.send" for d in deliveries
        ):
            self.system_output(session, NO_BOT_TEXT, message.thread_id, message.msg_id)
        return deliveries

    def _name_of(self, bot_uuid: str) -> str:
        record = self.state.registry.by_uuid(bot_uuid)
        return record.name if record is not None else bot_uuid

    async def _deliver(
        self,
        session: ChannelSession,
        decision: RouteDecision,
        u: Utterance,
        sender_uuid: str | None,
        source_msg_id: str | None,
        thread_id: str | None,
        task_id: str | None = None,
        refused: list[str] | None = None,
        from_person: bool = False,
    ) -> list[dict[str, Any]]:
        """Send to every chosen online bot; answers are handled as they come back.

        Never waits for one bot: a bot that is behind is shed or refused (`_send_to`), and
        the names of responders refused so go on `refused`.
        """
        config = self.state.config
        group = self.state.groups.get(session.group_id)
        u = replace(u, text=forwardable(u.text))  # every message to a bot fits its frame
        out = []
        for method, targets in (("chat.send", decision.send), ("chat.inject", decision.inject)):
            sending = method == "chat.send"
            for bot_uuid in targets:
                bot = self.state.presence.get(bot_uuid)
                if bot is None:
                    continue
                params = chat_params(
                    u,
                    version=bot.version,
                    recipient=bot.record.name,
                    mentioned=bot_uuid in decision.addressed,
                    is_sender=bot_uuid == sender_uuid,
                    timeout_ms=config.run_timeout_ms if sending else None,
                    recipient_uuid=bot_uuid,
                    role=self.state.groups.role_of(group, bot_uuid) if group else None,
                    idempotency_key=(f"run-{self._send_prefix}{next(self._send_numbers):016x}"
                                     if sending else None),
                )
                if task_id is not None:
                    params["session_context"]["task_id"] = task_id
                answer = await self._send_to(bot, method, params, session, thread_id,
                                             source_msg_id, refused)
                if answer is None:
                    continue
                if sending:
                    pending = PendingSend(bot_uuid, session, params["session_key"],
                                          source_msg_id, thread_id, answer, task_id,
                                          send_key=params["idempotency_key"],
                                          answers_person=from_person)
                    self.state.runs.sent(pending)
                    answer.add_done_callback(
                        lambda _f, p=pending, name=bot.record.name: self._report_lost(p, name)
                    )
                else:
                    answer.add_done_callback(
                        lambda f, b=bot: self._inject_answered(b, f))
                out.append({"bot_uuid": bot_uuid, "name": bot.record.name, "method": method})
        return out

    async def _send_to(
        self,
        bot: BotLink,
        method: str,
        params: dict[str, Any],
        session: ChannelSession,
        thread_id: str | None,
        source_msg_id: str | None,
        refused: list[str] | None,
    ) -> asyncio.Future[dict[str, Any]] | None:
        """Queue one delivery without waiting for the bot; None when it did not go.

        A bot that is behind (`backpressure.py`) has its inject shed, or its chat.send
        refused with a notice in the chat (its name then goes on `refused`).
        """
        pressure = self.state.backpressure
        observe = method == "chat.inject"
        if observe and not pressure.admit_inject(bot):
            return None
        why = None if observe else pressure.send_refusal(bot)
        if why is None:
            try:
                answer = await bot.conn.send_request(
                    method, params, timeout=self.state.config.request_timeout_seconds,
                    wait=False)
            except ConnectionClosed:
                return None
            except SendQueueFull:
                if observe:
                    pressure.shed(bot)
                    return None
                why = f"it is not keeping up ({bot.conn.queued} characters unsent to it)"
            else:
                pressure.sent(bot, inject=observe)
                return answer
        pressure.send_refused(bot, why)
        if refused is not None:
            refused.append(bot.record.name)
        self.system_output(session, f"{bot.record.name} did not take this message: {why}.",
                           thread_id, source_msg_id)
        return None

    def _inject_answered(self, bot: BotLink, answer: asyncio.Future[Any]) -> None:
        _ignore_answer(answer)
        self.state.backpressure.inject_answered(bot)

    def _report_lost(self, pending: PendingSend, name: str) -> None:
        """A `chat.send` that yielded no run is told to the chat, never dropped silently."""
        self.state.runs.acked(pending)  # idempotent: the outcome is on `pending` either way
        if pending.failure is None or self.stopping or pending.answer.cancelled():
            return
        log.warning("bot %s: no run for a delivery in %s: %s", name, pending.session.id,
                    pending.failure)
        self.system_output(pending.session, f"{name} did not take this message: "
                           f"{pending.failure}.", pending.thread_id, pending.source_msg_id)

    def claimed_binding(self, link: LinkSession, params: dict[str, Any]) -> BindingSpec:
        binding_id = params.get("binding_id")
        if not isinstance(binding_id, str):
            raise invalid("binding_id must be a string")
        spec = link.bindings.get(binding_id)
        if spec is None:
            raise BcnError(ErrorCode.NOT_FOUND, f"binding {binding_id!r} is not claimed here")
        return spec

    def pseudonym(self, spec: BindingSpec, user_id: str) -> str:
        """A stable stand-in for a platform user id when identities are not forwarded
        (remembered: a person writes many messages, and an HMAC per message is a cost)."""
        key = f"{spec.channel_type}:{spec.account_ref}:{user_id}"
        known = self._pseudonyms.get(key)
        if known is None:
            if len(self._pseudonyms) >= PSEUDONYMS_KEPT:
                self._pseudonyms.clear()
            digest = hmac.digest(self.state.identity_secret, key.encode(), "sha256")
            known = self._pseudonyms[key] = "user-" + digest[:8].hex()
        return known

    # ------------------------------------------------------------------ bots → chats
    async def run_event(self, bot: BotLink, run: Run, event: RunEvent) -> None:
        """One accepted run event (see `bot_events.py`): outputs, transcript, routing on."""
        runs = self.state.runs
        run.active_at = asyncio.get_running_loop().time()
        if run.orphaned_until is not None:
            run.orphaned_until = None
            log.info("run %s of %s continued after its bot came back", run.run_id,
                     bot.record.name)
        text = self._passed_on(bot, event.state, event.text)
        if event.state == "delta":
            if len(run.streamed) < MAX_TEXT_CHARS:
                run.streamed += text[:MAX_TEXT_CHARS - len(run.streamed)]
            self.run_output(run, "delta", text)
            runs.progressed(run)
            return
        if not event.terminal:
            runs.progressed(run)  # tool calls, thinking: part of the run, not shown
            return
        if event.state == "final" and not text:
            text = run.streamed  # a final that leaves the whole text to its deltas
        runs.finish(run, event.state)  # type: ignore[arg-type]
        self.run_output(run, event.state, text)
        if event.state != "final":
            return
        self.state.sessions.record(run.session, "assistant", bot.record.name, text, now_ms())
        if run.task_id is not None:  # a task's result goes back to its manager
            await self._task_result(bot, run, text)
        elif text.strip() or event.routing is not None:  # an empty final asks nobody
            await self._route_reply(bot, run, text, event.routing)

    @staticmethod
    def _passed_on(bot: BotLink, state: str, text: str) -> str:
        """A bot's text as the hub passes it on to chats and other bots: cut, with a
        notice, so that no peer is sent a frame above `bridge.bcn.limits`' maximum."""
        cut = forwardable(text)
        if cut is not text:
            log.warning("bot %s: %s of %d characters passed on cut to %d "
                        "(bridge.bcn.limits.MAX_FORWARDED_CHARS)", bot.record.name, state,
                        len(text), MAX_FORWARDED_CHARS)
        return cut

    async def _task_result(self, bot: BotLink, run: Run, text: str) -> None:
        group = self.state.groups.get(run.session.group_id)
        manager = self.state.groups.driver_uuid(group) if group else None
        if manager is None or manager == bot.record.bot_uuid:
            return
        routing = RoutingRequest((Selector("bot", manager),),
                                 reason=f"result of task {run.task_id}")
        await self._route_reply(bot, run, text, routing)

    async def _route_reply(
        self, bot: BotLink, run: Run, text: str, raw_routing: Any
    ) -> None:
        """Route a bot's final to the session's other bots, unless the guard says stop."""
        session = run.session
        group = self.state.groups.get(session.group_id)
        if group is None:
            return
        limit = self.state.config.max_bot_turns
        if not run.answers_person:
            # An answer to a person is no turn of bots talking among themselves: after a
            # gap, a bot's answers to a dozen queued messages arrive in a row, and counting
            # them told the chat "12 bot turns in a row without a human message".
            session.bot_turns += 1
        if session.bot_turns > limit:
            if not session.guard_tripped:
                session.guard_tripped = True
                log.info("session %s: ping-pong guard stopped bot-to-bot routing", session.id)
                self.system_output(
                    session,
                    f"Stopped passing bot replies on: {limit} bot turns in a row without a "
                    "human message. Write something to continue.",
                    run.thread_id,
                )
            return
        if isinstance(raw_routing, RoutingRequest):
            routing: RoutingRequest | None = raw_routing
        else:
            try:
                routing = parse_routing(raw_routing)
            except RoutingError as exc:
                log.warning("bot %s: ignored malformed routing: %s", bot.record.name, exc)
                routing = None
        participants = self.state.participants(group)
        decision = decide_route(
            participants,
            driver_uuid=self.state.groups.driver_uuid(group),
            sender_uuid=bot.record.bot_uuid,
            text=text,
            routing=routing,
            default_to_driver=self.state.config.bot_reply_default == "driver",
        )
        if not decision.send and not decision.inject:
            return
        utterance = self.bot_utterance(bot, session, text, decision,
                                       routing.reason if routing else "", run.thread_id)
        await self._deliver(session, decision, utterance, bot.record.bot_uuid, None, run.thread_id)

    def bot_utterance(
        self,
        bot: BotLink,
        session: ChannelSession,
        text: str,
        decision: RouteDecision,
        reason: str,
        thread_id: str | None,
    ) -> Utterance:
        """A bot's words as the other bots of the session are told about them."""
        group = self.state.groups.get(session.group_id)
        assert group is not None
        participants = self.state.participants(group)
        spec = self.state.links.specs.get(session.binding_id)
        channel = {
            "source": session.channel_type,
            "conversation_id": spec.conversation_id if spec else None,
            "thread_id": thread_id,
            "message_id": None,
            "is_bot": True,
            "identity_forwarding": True,
            "user_id": bot.record.bot_uuid,
            "actor_name": bot.record.name,
        }
        return Utterance(
            text, now_ms(), bot.record.name, channel, session.id, group.id, group.name,
            tuple([*(p.name for p in participants), *session.humans]), session.originator,
            tuple(p.name for p in participants if p.bot_uuid in decision.addressed),
            reason, {}, group.type,
        )

    async def deliver_from_bot(
        self,
        bot: BotLink,
        session: ChannelSession,
        text: str,
        target: str,
        *,
        reason: str,
        thread_id: str | None,
        task_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """Send a bot's words to one other bot of the session (tasks, task messages)."""
        group = self.state.groups.get(session.group_id)
        assert group is not None
        decision = decide_route(
            self.state.participants(group),
            driver_uuid=self.state.groups.driver_uuid(group),
            sender_uuid=bot.record.bot_uuid,
            routing=RoutingRequest((Selector("bot", target),), reason=reason),
        )
        utterance = self.bot_utterance(bot, session, text, decision, reason, thread_id)
        return await self._deliver(session, decision, utterance, bot.record.bot_uuid, None,
                                   thread_id, task_id)

    def run_output(self, run: Run, kind: str, text: str) -> None:
        """Queue one output of a run for the chat (unless the binding shows the lead only)."""
        session = run.session
        spec = self.state.links.specs.get(session.binding_id)
        if spec is not None and spec.outbound_visibility == "lead_only":
            group = self.state.groups.get(session.group_id)
            if group is None or self.state.groups.driver_uuid(group) != run.bot_uuid:
                return
        record = self.state.registry.by_uuid(run.bot_uuid)
        sender = {"bot_uuid": run.bot_uuid, "name": record.name if record else run.bot_uuid}
        self._queue(session, run.thread_id, run.run_id, run.source_msg_id, sender, kind, text,
                    run.next_seq())

    def system_output(
        self,
        session: ChannelSession,
        text: str,
        thread_id: str | None = None,
        source_msg_id: str | None = None,
    ) -> None:
        """A notice from the BCN itself (no bot available, guard, tasks, lost deliveries)."""
        self._queue(session, thread_id, None, source_msg_id, SYSTEM_SENDER, "system", text, 1)

    def _queue(
        self,
        session: ChannelSession,
        thread_id: str | None,
        run_id: str | None,
        source_msg_id: str | None,
        sender: dict[str, Any],
        kind: str,
        text: str,
        seq: int,
    ) -> None:
        event_id = f"evt-{self._event_prefix}-{next(self._event_ids)}"
        params = {
            "event_id": event_id,
            "binding_id": session.binding_id,
            "thread_id": thread_id,
            "bcs_session_id": session.id,
            "run_id": run_id,
            "source_msg_id": source_msg_id,
            "sender": sender,
            "kind": kind,
            "text": text,
            "seq": seq,
            "timestamp": now_ms(),
        }
        loop_time = asyncio.get_running_loop().time()
        outbox = self.state.outboxes.for_binding(session.binding_id)
        outbox.put(Delivery(event_id, params, loop_time))

    # ------------------------------------------------------------------ /stop
    def session_of(self, params: dict[str, Any]) -> ChannelSession:
        """The session a request names by `bcs_session_id`; `not_found` if there is none."""
        session_id = params.get("bcs_session_id")
        if not isinstance(session_id, str):
            raise invalid("bcs_session_id must be a string")
        session = self.state.sessions.get(session_id)
        if session is None:
            raise BcnError(ErrorCode.NOT_FOUND, f"unknown session {session_id!r}")
        return session

    async def abort(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self.session_of(params)
        run_id = params.get("run_id")
        if run_id is not None and not isinstance(run_id, str):
            raise invalid("run_id must be a string")
        runs = self.state.runs
        if run_id is None or not runs.find_any(run_id):
            await self._await_acks(session)
        if run_id is None:
            targets = runs.running_in(session.id)
        else:
            matches = runs.find_any(run_id)
            if not matches:
                raise BcnError(ErrorCode.NOT_FOUND, f"unknown run {run_id!r}")
            mine = [run for run in matches if run.session is session]
            if not mine:
                raise invalid(f"run {run_id!r} belongs to another session")
            targets = [run for run in mine if run.running]
        for run in targets:
            runs.finish(run, "aborted")  # from here on, late events of the run are dropped
            self.run_output(run, "aborted", "")
        await asyncio.gather(*(self.tell_abort(run) for run in targets))
        return {"aborted_run_ids": [run.run_id for run in targets]}

    async def _await_acks(self, session: ChannelSession) -> None:
        """A chat.send not yet acked counts as running: give its ACK a moment to arrive."""
        pending = self.state.runs.pending_in(session.id)
        wait = self.state.config.abort_ack_wait_seconds
        if pending and wait > 0:
            await asyncio.wait([p.answer for p in pending], timeout=wait)
            for bot_uuid in {p.bot_uuid for p in pending}:
                self.state.runs.settle(bot_uuid)

    async def tell_abort(self, run: Run) -> None:
        """Send the run's bot `chat.abort` (if it is online); a refusal is only logged."""
        bot = self.state.presence.get(run.bot_uuid)
        if bot is None:
            return
        try:
            await bot.conn.request(
                "chat.abort",
                {"session_key": run.session_key, "run_id": run.run_id},
                timeout=self.state.config.request_timeout_seconds,
            )
        except (BcnError, ConnectionClosed, TimeoutError) as exc:
            log.warning("bot %s did not confirm abort of %s: %s", bot.record.name, run.run_id, exc)


def _optional_id(params: dict[str, Any], key: str) -> str | None:
    """Platform ids arrive as strings or numbers; anything else is a client bug."""
    value = params.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise invalid(f"{key} must be a string")
    return str(value)


def _inbound_payload(
    session: ChannelSession, is_new: bool, deliveries: list[dict[str, Any]], *, duplicate: bool
) -> dict[str, Any]:
    return {
        "bcs_group_id": session.group_id,
        "bcs_session_id": session.id,
        "is_new_session": is_new,
        "duplicate": duplicate,
        "deliveries": deliveries,
    }
