"""Who may register a new bot, and the registrations that never show up.

With `registration: open` (the default) anyone who can reach the hub can register a bot
(`bot.connect` without a token); `registration: listed` (what deploy/ ships) registers only the
names a group's `bots` lists. `POST /register` needs an onboarding token either way. With
`auto_join` each new bot joins a group every link is told about. Three limits keep a flood
from costing the chats:

- a token bucket per IP address (`register_rate_per_minute` after `register_burst`): more
  is refused with `rate_limited` and when to retry;
- `auto_join_limit` per group: a full group refuses anonymous newcomers (bots listed by
  name in the group are not anonymous and always get in);
- `reap`: a registration that never connected is forgotten after
  `reap_unconnected_after_seconds`.
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bridge.hub.config import HubConfig

if TYPE_CHECKING:
    from bridge.hub.state import HubState

log = logging.getLogger(__name__)

MAX_ADDRESSES = 10_000
"""Buckets kept at once; the least recently used address is forgotten first (bounded)."""


class RegistrationRefused(Exception):
    """A registration the hub will not take; the message says which rule and what to do."""

    def __init__(self, code: str, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        """`rate_limited` (retry later), `group_full` or `not_listed` (ask the operator)."""
        self.message = message
        self.retry_after = retry_after


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class RegistrationRate:
    """A token bucket per address: `burst` at once, then `per_minute`."""

    def __init__(self, per_minute: float, burst: int) -> None:
        self.per_minute = per_minute
        self.burst = burst
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def take(self, address: str, now: float) -> float | None:
        """Spend one registration of `address`; None if allowed, else seconds to wait."""
        if self.per_minute <= 0:
            return None
        bucket = self._buckets.pop(address, None)
        if bucket is None:
            bucket = _Bucket(float(self.burst), now)
        rate = self.per_minute / 60
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.at) * rate)
        bucket.at = now
        self._buckets[address] = bucket
        while len(self._buckets) > MAX_ADDRESSES:
            self._buckets.popitem(last=False)
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return None
        return (1 - bucket.tokens) / rate


class Admission:
    """The registration rules of one hub (its rate limits live as long as the process)."""

    def __init__(self, config: HubConfig) -> None:
        self.config = config
        self.rate = RegistrationRate(config.register_rate_per_minute, config.register_burst)

    def listed(self, name: str | None) -> bool:
        """Whether `name` is one a group's `bots` names (what `registration: listed` admits)."""
        if name is None:
            return False
        wanted = name.casefold()
        return any(wanted == bot.casefold() for g in self.config.groups for bot in g.bots)

    def check_tokenless(self, name: str | None) -> None:
        """Raise `RegistrationRefused` when `bot.connect` without a token may not register
        `name` (POST /register has its own token and is not asked)."""
        if self.config.registration == "listed" and not self.listed(name):
            raise RegistrationRefused(
                "not_listed",
                f"this hub registers only the bots its groups list (registration: listed); "
                f"{name or 'a bot without a name'} is not one of them: ask the hub's operator "
                "for a bot token (hub.bots) or to list the name in a group",
            )

    def describe(self) -> str:
        """Who can register a bot, as the hub's start-up log says it."""
        if self.config.registration == "listed":
            names = sorted({bot for g in self.config.groups for bot in g.bots})
            tokenless = (f"/ws/bot without a token registers only the listed bots "
                         f"({', '.join(names) or 'none'})")
        else:
            joins = [g.id for g in self.config.groups if g.auto_join]
            tokenless = ("/ws/bot without a token registers any client that reaches the hub"
                         + (f", and auto_join puts it into {', '.join(joins)}" if joins else ""))
        tokens = len(self.config.register_tokens)
        post = (f"POST /register accepts {tokens} register token(s)" if tokens
                else "POST /register accepts nobody (no register_tokens)")
        return f"registration {self.config.registration}: {tokenless}; {post}"

    def check(self, state: HubState, address: str | None, name: str | None) -> None:
        """Raise `RegistrationRefused` unless a new bot of that name may register now."""
        if address is not None:
            wait = self.rate.take(address, time.monotonic())
            if wait is not None:
                seconds = max(1, math.ceil(wait))
                raise RegistrationRefused(
                    "rate_limited",
                    f"too many bot registrations from {address}: this hub takes "
                    f"{self.config.register_burst} at once, then "
                    f"{self.config.register_rate_per_minute:g} a minute; retry in {seconds} s, "
                    "or connect with the token of a bot registered before",
                    retry_after=seconds,
                )
        full = state.groups.full_for(name)
        if full:
            group = full[0]
            raise RegistrationRefused(
                "group_full",
                f"group {group.id!r} already has {len(group.auto_joined)} bots that joined by "
                f"themselves (auto_join_limit {group.auto_join_limit}); ask the hub's operator "
                "to list this bot in the group or to raise the limit",
            )

    def reap(self, state: HubState, now: float | None = None) -> int:
        """Forget registrations that never connected in time; links hear of the change."""
        after = self.config.reap_unconnected_after_seconds
        if after is None:
            return 0
        current = time.time() if now is None else now
        reaped = state.registry.reap(current - after)
        if not reaped:
            return 0
        changed = state.groups.forget({record.bot_uuid for record in reaped})
        log.info("forgot %d registered bot(s) that never connected within %.0f s",
                 len(reaped), after)
        state.announce(changed)
        return len(reaped)
