"""Bot run events at the door: which form, which run, whether to accept them.

The negotiated version alone picks the parser (`bridge.bcn.run_events`): v1/v2 bots send
`chat.event` (and legacy `agent`), v3 bots `chat` / `agent`. For v3 the hub checks what
the BCN server checks — the run is known and belongs to this bot, `sessionId` is the
run's session, `seq` strictly increases per run, the run has not ended — and answers a
refused event with an `invalid_request` frame (`id: null`, events have none) so the bot
can see why. An identical replay of a run's terminal event is ignored, not refused.
Legacy events keep the old, lenient rules: unknown runs and late events are dropped with
a log line.
"""

from __future__ import annotations

import logging

from bridge.bcn.errors import BcnError, ConnectionClosed, ErrorCode
from bridge.bcn.frames import Event
from bridge.bcn.run_events import RunEvent, RunEventError, fingerprint, parse_legacy, parse_v3
from bridge.hub.dispatch import Dispatcher
from bridge.hub.runs import Run
from bridge.hub.state import BotLink, HubState

log = logging.getLogger(__name__)


class BotEvents:
    def __init__(self, state: HubState, dispatcher: Dispatcher) -> None:
        self.state = state
        self.dispatcher = dispatcher

    async def handle(self, bot: BotLink, event: Event) -> None:
        try:
            accepted = self._accept(bot, event)
        except RunEventError as exc:
            log.warning("bot %s: refused %s event: %s", bot.record.name, event.event, exc)
            try:
                await bot.conn.respond_error(None, BcnError(ErrorCode.INVALID_REQUEST, str(exc)))
            except ConnectionClosed:
                pass
            return
        if accepted is not None:
            await self.dispatcher.run_event(bot, *accepted)

    def _accept(self, bot: BotLink, event: Event) -> tuple[Run, RunEvent] | None:
        if bot.run_events:
            parsed = parse_v3(event.event, event.payload, event.seq)
        else:
            legacy = parse_legacy(event.event, event.payload)
            if legacy is None:
                log.debug("bot %s: ignored event %s", bot.record.name, event.event)
                return None
            parsed = legacy
        run = self._find(bot, parsed.run_id)
        if run is None:
            if bot.run_events:
                raise RunEventError(f"V3 event runId {parsed.run_id!r} is unknown")
            log.debug("bot %s: event for unknown run %s dropped", bot.record.name, parsed.run_id)
            return None
        if bot.run_events:
            return self._sequenced(bot, run, parsed, event)
        if not run.running:
            # A run ended because its bot was gone: what the bot sends for it now is news
            # the chat will not see (it was told the reply failed), so say so in the log.
            level = logging.INFO if run.state == "offline" else logging.DEBUG
            log.log(level, "bot %s: late %s for %s run %s dropped",
                    bot.record.name, parsed.state, run.state, run.run_id)
            return None
        return run, parsed

    def _find(self, bot: BotLink, run_id: str) -> Run | None:
        runs = self.state.runs
        run = runs.find(bot.record.bot_uuid, run_id)
        if run is None:  # the ACK may be in, its callback not yet run: settle first
            runs.settle(bot.record.bot_uuid, run_id)
            run = runs.find(bot.record.bot_uuid, run_id)
        return run

    @staticmethod
    def _sequenced(
        bot: BotLink, run: Run, parsed: RunEvent, event: Event
    ) -> tuple[Run, RunEvent] | None:
        """The v3 ledger: session identity, strictly increasing seq, one terminal event."""
        if parsed.session_id != run.session.id:
            raise RunEventError("V3 event run/session identity mismatch")
        assert parsed.seq is not None
        if not run.running:
            replay = fingerprint(event.event, event.payload)
            if parsed.terminal and run.bot_seq == parsed.seq and run.terminal_fingerprint == replay:
                log.debug("bot %s: terminal replay of run %s ignored", bot.record.name, run.run_id)
                return None
            if run.state == "aborted" and parsed.state == "aborted":
                run.bot_seq = max(run.bot_seq or 0, parsed.seq)  # the bot confirms the abort
                return None
            raise RunEventError(f"V3 event run {run.run_id!r} is terminal or expired")
        if run.bot_seq is not None and parsed.seq <= run.bot_seq:
            raise RunEventError("V3 event seq is duplicate or regressed")
        run.bot_seq = parsed.seq
        if parsed.terminal:
            run.terminal_fingerprint = fingerprint(event.event, event.payload)
        return run, parsed
