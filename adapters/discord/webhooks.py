"""The bridge's own webhook in each parent channel, and knowing its posts when they echo.

Bots appear as themselves by posting through one webhook per parent channel (threads and
forum posts use their parent's webhook with `thread=`). The webhook is the bridge's own if
one exists — found by the id remembered in the store, else by its creator being the
bridge's bot — and created otherwise; after "Unknown Webhook" (someone deleted it) it is
made anew. Without the Manage Webhooks permission there is no webhook: the adapter posts as
its bot with a bold name prefix, and this says so once per channel in the log.

Every webhook id is remembered in the account's store (shared by all bridge instances), so
the gateway echo of a post is recognised by id — even when it arrives before the REST call
that made it returned, after a restart, during backfill, and when another instance posted.
Finding or creating a channel's webhook runs under a lease (`webhook:<channel>`), so two
instances posting their first replies in one channel at once end up with one webhook, not
two (an edit must go through the webhook that posted).

"No webhook here" (no Manage Webhooks) is forgotten when roles or channels change — events
only the instance running that server's shard sees — and otherwise looked at again after
`RECHECK_UNAVAILABLE` seconds, so an instance without that gateway notices too.
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp
import discord

from adapters.discord.errors import MAX_WEBHOOKS
from adapters.discord.redaction import redact
from adapters.discord.short_leases import under_lease
from bridge.core.account_state import AccountState

log = logging.getLogger(__name__)

WEBHOOK_NAME = "bcn-bridge"
"""The name of the webhooks the bridge creates (Discord shows it in the channel settings)."""

RECHECK_UNAVAILABLE = 300.0
CREATE_LEASE_TTL = 15.0
CREATE_RETRY = 0.25

WebhookChannel = discord.TextChannel | discord.ForumChannel | discord.VoiceChannel


class _NoManageWebhooks(Exception):
    """The cached permissions already say the bot may not manage webhooks here."""


class ChannelWebhooks:
    """Finds, creates and remembers the bridge's webhook per parent channel."""

    def __init__(self, account: str, state: AccountState, session: aiohttp.ClientSession) -> None:
        self.account = account
        self.state = state
        self.session = session
        self.own_ids: set[int] = set()
        self.bot_id: int | None = None
        """The bridge's bot user: webhooks it created are the bridge's own."""
        self._hooks: dict[int, discord.Webhook] = {}
        self._unavailable: dict[int, float] = {}
        """Channel → when it was found to allow no webhook (loop time)."""
        self._warned: set[int] = set()
        self._locks: dict[int, asyncio.Lock] = {}

    async def remember_bound(self, channel_ids: list[int]) -> None:
        """Load (and keep alive in the store) the webhook ids of the bound channels."""
        for channel_id in channel_ids:
            record = await self.state.get(f"webhook:{channel_id}")
            if record and str(record.get("id", "")).isdigit():
                await self._remember(channel_id, int(record["id"]))

    async def _remember(self, channel_id: int, webhook_id: int) -> None:
        self.own_ids.add(webhook_id)
        await self.state.put(f"webhook:{channel_id}", {"id": str(webhook_id)})
        await self.state.put(f"own-webhook:{webhook_id}", {"channel": str(channel_id)})

    async def is_own(self, webhook_id: int) -> bool:
        """Did this bridge (any instance, any time in the store's retention) make it?"""
        if webhook_id in self.own_ids:
            return True
        if await self.state.get(f"own-webhook:{webhook_id}") is not None:
            self.own_ids.add(webhook_id)
            return True
        return False

    def forget(self, channel_id: int) -> None:
        """The webhook is gone ("Unknown Webhook"); the next post makes a new one."""
        self._hooks.pop(channel_id, None)

    def permissions_changed(self) -> None:
        """Roles or channel overwrites changed: look at every channel's webhook again."""
        self._unavailable.clear()

    async def for_channel(self, channel: WebhookChannel) -> discord.Webhook | None:
        """The bridge's webhook in this channel, or None when it cannot have one."""
        if (hook := self._hooks.get(channel.id)) is not None:
            return hook
        if self._still_unavailable(channel.id):
            return None
        lock = self._locks.setdefault(channel.id, asyncio.Lock())
        async with lock:
            if (hook := self._hooks.get(channel.id)) is not None:
                return hook
            try:
                hook = await self._find_or_create(channel)
            except (_NoManageWebhooks, discord.Forbidden):
                self._unavailable_here(channel, "the bot lacks the Manage Webhooks permission")
                return None
            except discord.HTTPException as exc:
                if exc.code != MAX_WEBHOOKS:
                    raise
                self._unavailable_here(channel, "the channel already has 15 webhooks")
                return None
            if channel.id in self._warned:
                self._warned.discard(channel.id)
                log.info("discord:%s posts through a webhook in #%s (%s) again",
                         self.account, channel.name, channel.id)
            self._hooks[channel.id] = hook
            return hook

    async def _find_or_create(self, channel: WebhookChannel) -> discord.Webhook:
        me = channel.guild.me  # None for a channel fetched over REST (no gateway here)
        if me is not None and not channel.permissions_for(me).manage_webhooks:
            raise _NoManageWebhooks
        return await under_lease(self.state, f"webhook:{channel.id}",
                                 lambda: self._find_or_create_held(channel, me),
                                 ttl=CREATE_LEASE_TTL, retry=CREATE_RETRY)

    async def _find_or_create_held(
        self, channel: WebhookChannel, me: discord.Member | None
    ) -> discord.Webhook:
        own_user = self.bot_id or (me.id if me is not None else None)
        record = await self.state.get(f"webhook:{channel.id}")
        remembered = int(record["id"]) if record and str(record.get("id", "")).isdigit() else None
        existing = [hook for hook in await channel.webhooks() if hook.token]
        own = [hook for hook in existing if hook.id == remembered] or [
            hook for hook in existing
            if hook.user is not None and own_user is not None and hook.user.id == own_user
        ]
        if own:
            found = own[0]
        else:
            found = await channel.create_webhook(
                name=WEBHOOK_NAME, reason="bcn-bridge posts each bot's replies under its name"
            )
            log.info("discord:%s created webhook %s in #%s (%s)",
                     self.account, found.id, channel.name, channel.id)
        assert found.token is not None
        await self._remember(channel.id, found.id)  # still under the lease: the next finds it
        # Executed over the adapter's own session: its own timeout, not the bot's limits.
        return discord.Webhook.partial(found.id, found.token, session=self.session)

    def _still_unavailable(self, channel_id: int) -> bool:
        since = self._unavailable.get(channel_id)
        if since is None:
            return False
        if asyncio.get_running_loop().time() - since < RECHECK_UNAVAILABLE:
            return True
        del self._unavailable[channel_id]
        return False

    def _unavailable_here(self, channel: WebhookChannel, reason: str) -> None:
        """Post with the name prefix here until permissions change; say so once."""
        self._unavailable[channel.id] = asyncio.get_running_loop().time()
        if channel.id in self._warned:
            return
        self._warned.add(channel.id)
        log.warning(
            "discord:%s cannot post through a webhook in #%s (%s): %s. Bots' replies there "
            "are posted by the bridge's bot under a bold name prefix; see docs/discord.md "
            "(permissions) to show each bot under its own name.",
            self.account, channel.name, channel.id, redact(reason),
        )
