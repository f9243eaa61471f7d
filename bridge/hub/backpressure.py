"""What the hub does with a bot that reads slower than it is sent to (docs/hub.md).

A bot's queue is what the hub has sent it and it has not answered: requests still in the
connection's send queue, on the wire, or unread on the bot's side (`Connection.unanswered`).
Fanning a message out never waits for one bot, so the queue is bounded here instead:

- an observer (`chat.inject`) at `observer_queue_max` is **shed**: injects for it are
  dropped — counted, logged once, the bot told once with a `bot.backpressure` event — until
  it is down to half of that, when it hears it caught up and how many it missed;
- one that sheds `observer_shed_limit` in a row without catching up is **cut off**: offline
  at once, its socket closed with code 4003 and the reason (`BotEndpoint.cut_off`);
- a responder (`chat.send`) is never dropped without a word: at `bot_queue_max`, or when
  its send queue is full, the delivery fails with a notice in the chat (`Dispatcher`).

Counters for `/metrics` live here too (`collect`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from bridge.bcn.errors import ConnectionClosed
from bridge.bcn.send_queue import SendQueueFull
from bridge.hub.config import HubConfig

if TYPE_CHECKING:
    from bridge.hub.state import BotLink, BotPresence

log = logging.getLogger(__name__)

NOTICE_EVENT = "bot.backpressure"
"""The event a bot gets when it starts being shed (`state: shedding`) and once it caught
up (`state: caught_up`, with how many injects it missed)."""
CLOSE_TOO_SLOW = 4003


@dataclass(slots=True)
class Backlog:
    """How far behind one bot connection is, as the hub sees it."""

    injects_out: int = 0
    """chat.inject sent to it and not answered yet."""
    peak: int = 0
    """The most unanswered requests it ever had (what the bounds are checked against)."""
    shedding: bool = False
    shed_now: int = 0
    """Injects shed since it last caught up."""
    shed_total: int = 0
    episodes: int = 0
    """How many times it fell behind (only the first is a warning in the log)."""
    cut: bool = False


class BotBackpressure:
    """The shedding rules above, and their counters, for every bot of one hub."""

    def __init__(self, config: HubConfig) -> None:
        self.config = config
        self.resume_at = config.observer_queue_max // 2
        self.injects_shed = 0
        self.injects_cut = 0
        """Injects sent to a bot but unanswered when it was cut off (they may be lost)."""
        self.sends_refused = 0
        self.bots_cut = 0
        self.cut_off: Callable[[BotLink, str], None] = lambda _bot, _reason: None
        """Takes a bot offline and closes its socket; set by the bot endpoint."""

    # ------------------------------------------------------------------ chat.send
    def send_refusal(self, bot: BotLink) -> str | None:
        """Why a `chat.send` cannot go to `bot` now; None when it can."""
        waiting = bot.conn.unanswered
        if waiting >= self.config.bot_queue_max:
            return f"it is not keeping up ({waiting} messages are waiting for it)"
        return None

    def send_refused(self, bot: BotLink, why: str) -> None:
        self.sends_refused += 1
        log.warning("bot %s (%s): chat.send not sent: %s", bot.record.name,
                    bot.record.bot_uuid, why)

    def sent(self, bot: BotLink, *, inject: bool) -> None:
        """A request went into the bot's queue (after it was admitted)."""
        if inject:
            bot.backlog.injects_out += 1
        waiting = bot.conn.unanswered
        if waiting > bot.backlog.peak:
            bot.backlog.peak = waiting

    # ------------------------------------------------------------------ chat.inject
    def admit_inject(self, bot: BotLink) -> bool:
        """Whether a `chat.inject` may go to `bot`; False means it was shed (and counted)."""
        backlog = bot.backlog
        if backlog.cut:  # cut off already, the socket still closing
            backlog.shed_total += 1
            self.injects_shed += 1
            return False
        waiting = bot.conn.unanswered
        if backlog.shedding and waiting <= self.resume_at:
            self._caught_up(bot)
        if not backlog.shedding and waiting < self.config.observer_queue_max:
            return True
        self.shed(bot)
        return False

    def shed(self, bot: BotLink) -> None:
        """Drop one inject for `bot`: count it, start an episode, cut the bot past the limit."""
        backlog = bot.backlog
        if not backlog.shedding:
            backlog.shedding = True
            backlog.episodes += 1
            log.log(logging.WARNING if backlog.episodes == 1 else logging.INFO,
                    "bot %s (%s) is not keeping up (%d requests unanswered, %d characters "
                    "unsent; time %d on this connection): its chat.inject are shed until it is "
                    "down to %d", bot.record.name, bot.record.bot_uuid, bot.conn.unanswered,
                    bot.conn.queued, backlog.episodes, self.resume_at)
            self._tell(bot, {"state": "shedding", "waiting": bot.conn.unanswered,
                             "limit": self.config.observer_queue_max,
                             "resume_at": self.resume_at,
                             "message": "You are not keeping up: messages you would observe "
                             "(chat.inject) are dropped until you catch up."})
        backlog.shed_now += 1
        backlog.shed_total += 1
        self.injects_shed += 1
        if backlog.shed_now >= self.config.observer_shed_limit:
            self._cut(bot)

    def inject_answered(self, bot: BotLink) -> None:
        """An inject was answered (or failed): the bot may have caught up."""
        backlog = bot.backlog
        backlog.injects_out -= 1
        if backlog.shedding and not backlog.cut and bot.conn.unanswered <= self.resume_at:
            self._caught_up(bot)

    def _caught_up(self, bot: BotLink) -> None:
        backlog = bot.backlog
        log.info("bot %s (%s) caught up: %d chat.inject were shed while it was behind",
                 bot.record.name, bot.record.bot_uuid, backlog.shed_now)
        self._tell(bot, {"state": "caught_up", "shed": backlog.shed_now,
                         "shed_total": backlog.shed_total,
                         "message": f"You caught up; {backlog.shed_now} messages you would "
                         "have observed were dropped while you were behind."})
        backlog.shedding = False
        backlog.shed_now = 0

    def _cut(self, bot: BotLink) -> None:
        backlog = bot.backlog
        backlog.cut = True
        self.bots_cut += 1
        self.injects_cut += backlog.injects_out
        reason = f"too slow: {backlog.shed_now} chat.inject shed in a row"
        log.warning("bot %s (%s) disconnected, %s without catching up (%d requests "
                    "unanswered, %d of them chat.inject, now lost with the connection)",
                    bot.record.name, bot.record.bot_uuid, reason, bot.conn.unanswered,
                    backlog.injects_out)
        self.cut_off(bot, reason)

    @staticmethod
    def _tell(bot: BotLink, payload: dict[str, object]) -> None:
        """The notice goes behind what the bot has not read yet; it cannot overtake that."""
        try:
            bot.conn.send_event_nowait(NOTICE_EVENT, payload)
        except (SendQueueFull, ConnectionClosed) as exc:
            log.info("bot %s: backpressure notice not sent (%s)", bot.record.name, exc)

    # ------------------------------------------------------------------ metrics
    def collect(self, presence: BotPresence) -> Iterator[Metric]:
        bots = presence.all()
        yield GaugeMetricFamily(
            "bcn_hub_bot_queue_max", "Most requests unanswered by one online bot now.",
            value=max((bot.conn.unanswered for bot in bots), default=0))
        yield GaugeMetricFamily(
            "bcn_hub_bot_queue_peak", "Most requests ever unanswered by one online bot.",
            value=max((bot.backlog.peak for bot in bots), default=0))
        yield GaugeMetricFamily(
            "bcn_hub_bots_shedding", "Online bots whose chat.inject are being shed now.",
            value=sum(1 for bot in bots if bot.backlog.shedding))
        yield GaugeMetricFamily(
            "bcn_hub_bot_send_queue_chars",
            "Characters waiting to be written to bot sockets, over every bot.",
            value=sum(bot.conn.queued for bot in bots))
        for name, documentation, value in (
            ("bcn_hub_injects_shed", "chat.inject dropped for bots that were behind.",
             self.injects_shed),
            ("bcn_hub_injects_cut", "chat.inject unanswered when their bot was cut off.",
             self.injects_cut),
            ("bcn_hub_sends_refused", "chat.send failed (with a notice) for a bot behind.",
             self.sends_refused),
            ("bcn_hub_slow_bots_disconnected", "Bots cut off for staying behind.",
             self.bots_cut),
        ):
            counter = CounterMetricFamily(name, documentation)
            counter.add_metric([], value)
            yield counter
