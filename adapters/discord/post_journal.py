"""A bot's reply is posted once, even when the instance posting it dies mid-call.

The outbox records each part's message id as soon as `send` returns; a kill -9 between
Discord accepting a post and that record makes the next instance send the part again, and
Discord has no idempotency key for webhook executions. So before a reply part is posted the
adapter notes the attempt in the store (`posting:<run>:<part>:<text digest>`), and after
it the message id. A send that finds such a note is a retry: it returns the recorded id, or
— the post landed but the id never got written — finds the post in the channel's latest
messages (the bridge's own author, the same text, after the attempt began) and returns
that, posting only when it is not there.

Only parts of a bot's run are covered: a run posts each part (with that text) once, so
the same key twice can only be a retry. Notices without a run may repeat on purpose.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import discord

from bridge.core.account_state import AccountState
from bridge.core.model import Outbound

CLOCK_MARGIN = timedelta(minutes=1)
"""How far before the attempt the search starts: the bridge's clock is not Discord's."""
SEARCH_LIMIT = 100
"""Latest messages of the channel looked through for a post that landed unrecorded."""

IsOurs = Callable[[discord.Message], Awaitable[bool]]


class PostJournal:
    def __init__(self, state: AccountState) -> None:
        self.state = state

    @staticmethod
    def key(out: Outbound) -> str | None:
        if not out.run_id:
            return None
        digest = hashlib.sha256(out.text.encode()).hexdigest()[:16]
        return f"posting:{out.run_id}:{out.part}:{digest}"

    async def landed(
        self, key: str, channel: discord.abc.Messageable, is_ours: IsOurs
    ) -> int | None:
        """The id of an earlier attempt's post, if one landed; else notes this attempt."""
        record = await self.state.get(key)
        if record is None:
            since = discord.utils.time_snowflake(datetime.now(UTC) - CLOCK_MARGIN)
            await self.state.put(key, {"since": str(since)})
            return None
        if str(record.get("message", "")).isdigit():
            return int(record["message"])
        since = int(record.get("since") or 0)
        async for message in channel.history(limit=SEARCH_LIMIT):
            if message.id <= since:
                break
            if await is_ours(message):
                await self.posted(key, message.id)
                return message.id
        return None

    async def posted(self, key: str, message_id: int) -> None:
        await self.state.put(key, {"message": str(message_id)})
