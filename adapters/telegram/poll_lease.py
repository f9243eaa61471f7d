"""One poller per bot token across all bridge instances, and no update lost to a kill -9.

Telegram lets exactly one `getUpdates` loop run per token: a second one makes the first
fail with HTTP 409. So with several bridge instances, polling runs under a lease in the
store; the others stand by and take over within `POLL_LEASE_TTL` + `STANDBY_RETRY`
seconds when the poller dies.

python-telegram-bot confirms a batch of updates (by asking for the next offset) as soon as
it has fetched it, before the handler has relayed it. `UpdateJournal` writes every fetched
update to the store before python-telegram-bot sees it and crosses it off once relayed; the
next poller replays what is left. The core drops messages it relayed already, so a replay
never doubles one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from bridge.background import Background
from bridge.core.account_state import AccountState
from bridge.store.leases import Lease

log = logging.getLogger(__name__)

POLL_LEASE_TTL = 10.0
STANDBY_RETRY = 2.0


def _relayed_key(update_id: int) -> str:
    return f"update-relayed:{update_id}"


class UpdateJournal:
    """Fetched updates not yet relayed, in the store.

    Keeping and crossing off run in different tasks (the poll and the handler), so they must
    not both rewrite one record: a cross-off that read the list before a batch was added
    and wrote it back after would drop that batch from the journal, and a kill -9 then
    would lose it. So only `keep` writes the list of ids (the poller, one at a time under
    its lease and this lock); `done` marks one update relayed with a once-only key, and
    `keep` drops marked ids from the list the next time it writes it.
    """

    def __init__(self, state: AccountState) -> None:
        self.state = state
        self._writing = asyncio.Lock()

    async def _ids(self) -> list[int]:
        found = await self.state.get("journal")
        return [int(i) for i in (found or {}).get("ids", [])]

    async def _unrelayed(self, ids: list[int]) -> list[int]:
        """`ids` without those marked relayed (one store call)."""
        keys = {_relayed_key(i): i for i in ids}
        relayed = await self.state.done_among(list(keys))
        return [i for key, i in keys.items() if key not in relayed]

    async def keep(self, updates: list[dict[str, Any]]) -> None:
        """Before python-telegram-bot sees a batch (and confirms it with its next poll)."""
        fresh = [u for u in updates if isinstance(u.get("update_id"), int)]
        if not fresh:
            return
        for update in fresh:
            await self.state.put(f"update:{update['update_id']}", {"update": update})
        async with self._writing:
            ids = await self._unrelayed(await self._ids())
            known = set(ids)
            ids += [u["update_id"] for u in fresh if u["update_id"] not in known]
            await self.state.put("journal", {"ids": ids})

    async def done(self, update_id: int) -> None:
        await self.state.done(_relayed_key(update_id))

    async def waiting(self) -> list[dict[str, Any]]:
        """Updates a previous poller fetched but did not relay, oldest first."""
        updates = []
        for update_id in sorted(await self._unrelayed(await self._ids())):
            found = await self.state.get(f"update:{update_id}")
            if found and isinstance(found.get("update"), dict):
                updates.append(found["update"])
            else:  # aged out of the store: nothing left to relay
                await self.done(update_id)
        return updates


class PollLease:
    """Polls while this instance holds the account's poll lease, and only then.

    The core's `LeaseKeeper` holds the lease: it rides out a short store outage, and when it
    can no longer be sure of the lease it stops polling *before* the lease can pass to a
    standby, so two pollers never overlap (Telegram would answer the second with 409).
    """

    def __init__(
        self,
        state: AccountState,
        account: str,
        *,
        start_polling: Callable[[], Awaitable[None]],
        stop_polling: Callable[[], Awaitable[None]],
        ttl: float = POLL_LEASE_TTL,
        standby_retry: float = STANDBY_RETRY,
    ) -> None:
        self.account = account
        self.start_polling = start_polling
        self.stop_polling = stop_polling
        self.keeper = state.keeper("poll", ttl, standby_retry=standby_retry,
                                   who=f"telegram:{account}")
        self.polling = False
        self._first: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        """Settled after the first attempt: polling, or standing by."""
        self._background = Background(f"telegram:{account} poll lease")

    async def start(self) -> None:
        """Returns once this instance polls or stands by (a single instance polls here)."""
        self._background.spawn(self._serve(), name=f"telegram:{self.account}:poll-lease")
        await asyncio.shield(self._first)

    async def stop(self) -> None:
        """Stop polling, then hand the lease to a standby at once (not after the TTL)."""
        await self._background.cancel_all()

    def _settle(self) -> None:
        if not self._first.done():
            self._first.set_result(None)

    async def _serve(self) -> None:
        try:
            await self.keeper.serve(
                self._poll, on_standby=self._settle,
                standing_by="another bridge instance polls this bot; standing by",
            )
        except asyncio.CancelledError:
            self._settle()
            raise
        except BaseException as exc:
            if not self._first.done():
                self._first.set_exception(exc)  # start() raises it
            raise

    async def _poll(self, lease: Lease) -> None:
        """The guarded work: poll until the keeper stops it (stopping polling is its end)."""
        try:
            await self.start_polling()
            self.polling = True
            log.info("telegram:%s polls (lease %s)", self.account, lease.token)
            self._settle()
            await asyncio.Event().wait()
        finally:
            self.polling = False
            await self.stop_polling()
