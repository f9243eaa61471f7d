"""Trying again with backoff, written once: a step until it is done, a connection for good.

An adapter whose platform library does not retry by itself (or a step of the bridge's own
that must not be given up, like relaying a payload before it is acked) says only *what* to
try and which failures may pass; the waiting (`Backoff`: exponential, jittered, capped) and
the logging (`OutageTracker`: one warning per outage, one line when it ends) are here.

    retrier = Retrier(outage, retryable=transient, backoff=Backoff(initial=0.2))
    await retrier.until_done(attempt)      # attempt() again until it returns
    await retrier.keep_connected(serve)    # one connection after another, until cancelled

- `until_done(attempt)`: runs `attempt()` until it returns; a failure that `retryable`
  accepts is waited out and tried again, any other is raised to the caller.
- `keep_connected(serve)`: `serve(up)` opens a connection, calls `up()` once it works (that
  ends an outage and resets the backoff) and returns or raises when the connection ends.
  One that worked is reopened at once; one that failed, or closed before it worked, is an
  outage, waited out. A failure `retryable` refuses is raised: the account cannot go on.

`sleep` is injectable so tests can check the delays without waiting them out. A failure
with a `retry_after` attribute (seconds, as `TransientSendError` carries) waits at least
that long.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from bridge.core.outage import OutageTracker
from bridge.retry import Backoff

T = TypeVar("T")

Sleep = Callable[[float], Awaitable[object]]
Serve = Callable[[Callable[[], None]], Awaitable[object]]
"""Opens one connection, calls the `up` it is given once the connection works, and returns
or raises when it ends."""


def any_exception(exc: BaseException) -> bool:
    """The default `retryable`: every `Exception` (never a cancellation)."""
    return isinstance(exc, Exception)


def describe_failure(exc: BaseException) -> str:
    """A failure as the outage line names it: its class and message."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass(slots=True)
class Retrier:
    """What to do when an attempt fails: which failures to wait out, how long, and whom to
    tell (see the module doc)."""

    outage: OutageTracker
    retryable: Callable[[BaseException], bool] = any_exception
    backoff: Backoff = field(default_factory=Backoff)
    describe: Callable[[BaseException], str] = describe_failure
    sleep: Sleep = asyncio.sleep

    async def until_done(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """`attempt()`'s result once it succeeds; failures `retryable` refuses are raised."""
        while True:
            try:
                result = await attempt()
            except Exception as exc:
                if not self.retryable(exc):
                    raise
                await self._wait_out(self.describe(exc), getattr(exc, "retry_after", None))
                continue
            self._worked()
            return result

    async def keep_connected(self, serve: Serve) -> None:
        """Serve connection after connection until cancelled or refused (raised)."""
        while True:
            worked = False

            def up() -> None:
                nonlocal worked
                worked = True
                self._worked()

            try:
                await serve(up)
            except Exception as exc:
                if not self.retryable(exc):
                    raise
                await self._wait_out(self.describe(exc), getattr(exc, "retry_after", None))
                continue
            if not worked:
                # Closed before it ever worked: an outage too, or this loop would spin.
                await self._wait_out("the connection closed before it worked")

    def _worked(self) -> None:
        self.outage.up()
        self.backoff.reset()

    async def _wait_out(self, reason: str, retry_after: float | None = None) -> None:
        """Count the failure (logged once per outage) and wait the next delay."""
        self.outage.down(reason)
        await self.sleep(self.backoff.next_delay(retry_after))
