"""Discord API objects as JSON, shaped like Discord sends them (API v10).

Plain dict builders for the fake server in `tests/fakes/discord.py`: users, members, roles,
channels, threads, guilds, messages and interactions, with every field discord.py reads
when it builds its own objects (a missing one kills the client silently).
"""

from __future__ import annotations

import itertools
import re
import secrets
import time
from datetime import UTC, datetime
from typing import Any

DISCORD_EPOCH_MS = 1_420_070_400_000

TEXT, FORUM, PUBLIC_THREAD = 0, 15, 11

VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
EMBED_LINKS = 1 << 14
READ_MESSAGE_HISTORY = 1 << 16
MANAGE_WEBHOOKS = 1 << 29
SEND_MESSAGES_IN_THREADS = 1 << 38
BRIDGE_PERMISSIONS = (
    VIEW_CHANNEL | SEND_MESSAGES | EMBED_LINKS | READ_MESSAGE_HISTORY | MANAGE_WEBHOOKS
    | SEND_MESSAGES_IN_THREADS
)
EVERYONE_PERMISSIONS = VIEW_CHANNEL | SEND_MESSAGES | READ_MESSAGE_HISTORY

MESSAGE_CONTENT_INTENT = 1 << 15
MEMBERS_INTENT = 1 << 1
PRESENCES_INTENT = 1 << 8
PRIVILEGED_INTENTS = {"members": MEMBERS_INTENT, "presences": PRESENCES_INTENT,
                      "message_content": MESSAGE_CONTENT_INTENT}


class Snowflakes:
    """Discord ids: milliseconds since 2015 in the high bits, so they sort by time."""

    def __init__(self) -> None:
        self._last = 0
        self._counter = itertools.count()

    def at(self, when: datetime) -> int:
        ms = int(when.timestamp() * 1000) - DISCORD_EPOCH_MS
        return (ms << 22) | (next(self._counter) & 0xFFF)

    def next(self) -> int:
        ms = int(time.time() * 1000) - DISCORD_EPOCH_MS
        value = max(ms << 22, self._last + 1)
        self._last = value
        return value


def iso(when: datetime | None = None) -> str:
    return (when or datetime.now(UTC)).isoformat()


def snowflake_time(snowflake: int) -> datetime:
    return datetime.fromtimestamp(((snowflake >> 22) + DISCORD_EPOCH_MS) / 1000, UTC)


def url_token(length: int = 68) -> str:
    """A webhook or interaction token: URL-safe characters, long."""
    return secrets.token_urlsafe(length)[:length]


def user(user_id: int, username: str, *, global_name: str | None = None,
         bot: bool = False) -> dict[str, Any]:  # fmt: skip
    found: dict[str, Any] = {
        "id": str(user_id), "username": username, "discriminator": "0",
        "global_name": global_name, "avatar": None, "public_flags": 0,
    }
    if bot:
        found["bot"] = True
    return found


def member(user_data: dict[str, Any], *, nick: str | None = None,
           roles: list[int] | None = None) -> dict[str, Any]:  # fmt: skip
    return {
        "user": user_data, "nick": nick, "roles": [str(r) for r in roles or []],
        "joined_at": iso(), "deaf": False, "mute": False, "flags": 0, "avatar": None,
        "premium_since": None, "pending": False,
    }


def role(role_id: int, name: str, permissions: int, position: int = 0) -> dict[str, Any]:
    return {
        "id": str(role_id), "name": name, "permissions": str(permissions),
        "position": position, "color": 0, "hoist": False, "managed": False,
        "mentionable": True, "flags": 0, "icon": None, "unicode_emoji": None,
    }


def channel(channel_id: int, guild_id: int, name: str, kind: int = TEXT,
            position: int = 0) -> dict[str, Any]:  # fmt: skip
    found: dict[str, Any] = {
        "id": str(channel_id), "type": kind, "guild_id": str(guild_id), "name": name,
        "position": position, "permission_overwrites": [], "parent_id": None, "nsfw": False,
        "topic": None, "last_message_id": None, "rate_limit_per_user": 0, "flags": 0,
    }
    if kind == FORUM:
        found.update({"available_tags": [], "default_reaction_emoji": None,
                      "default_sort_order": None, "default_forum_layout": 0,
                      "default_thread_rate_limit_per_user": 0})
    return found


def thread(thread_id: int, guild_id: int, parent_id: int, name: str,
           owner_id: int) -> dict[str, Any]:  # fmt: skip
    return {
        "id": str(thread_id), "type": PUBLIC_THREAD, "guild_id": str(guild_id),
        "parent_id": str(parent_id), "name": name, "owner_id": str(owner_id),
        "last_message_id": None, "message_count": 0, "member_count": 1,
        "rate_limit_per_user": 0, "flags": 0, "total_message_sent": 0,
        "thread_metadata": {"archived": False, "auto_archive_duration": 1440,
                            "archive_timestamp": iso(), "locked": False},
    }


def guild(guild_id: int, name: str, *, roles: list[dict[str, Any]],
          channels: list[dict[str, Any]], threads: list[dict[str, Any]],
          members: list[dict[str, Any]], owner_id: int) -> dict[str, Any]:  # fmt: skip
    """GUILD_CREATE's payload: the guild with its channels, threads and members."""
    return {
        "id": str(guild_id), "name": name, "icon": None, "splash": None,
        "discovery_splash": None, "owner_id": str(owner_id), "afk_channel_id": None,
        "afk_timeout": 300, "verification_level": 0, "default_message_notifications": 0,
        "explicit_content_filter": 0, "roles": roles, "emojis": [], "stickers": [],
        "features": [], "mfa_level": 0, "application_id": None, "system_channel_id": None,
        "system_channel_flags": 0, "rules_channel_id": None, "vanity_url_code": None,
        "description": None, "banner": None, "premium_tier": 0,
        "premium_subscription_count": 0, "preferred_locale": "en-US",
        "public_updates_channel_id": None, "nsfw_level": 0, "premium_progress_bar_enabled": False,
        "joined_at": iso(), "large": False, "unavailable": False,
        "member_count": len(members), "voice_states": [], "members": members,
        "channels": channels, "threads": threads, "presences": [], "stage_instances": [],
        "guild_scheduled_events": [], "soundboard_sounds": [],
    }


def attachment(attachment_id: int, filename: str, content_type: str, size: int) -> dict[str, Any]:
    url = (f"https://cdn.discordapp.com/attachments/{attachment_id}/{filename}"
           f"?ex=6a000000&is=69f00000&hm={secrets.token_hex(32)}")
    return {"id": str(attachment_id), "filename": filename, "content_type": content_type,
            "size": size, "url": url, "proxy_url": url.replace("cdn.", "media."),
            "width": None, "height": None}  # fmt: skip


def message(
    message_id: int,
    channel_id: int,
    author: dict[str, Any],
    content: str,
    *,
    guild_id: int | None,
    author_member: dict[str, Any] | None = None,
    mentions: list[dict[str, Any]] | None = None,
    mention_roles: list[int] | None = None,
    mention_everyone: bool = False,
    attachments: list[dict[str, Any]] | None = None,
    reply_to: dict[str, Any] | None = None,
    webhook_id: int | None = None,
    flags: int = 0,
    kind: int | None = None,
) -> dict[str, Any]:
    """A MESSAGE_CREATE payload (and the REST answer for a posted message)."""
    found: dict[str, Any] = {
        "id": str(message_id), "channel_id": str(channel_id), "author": author,
        "content": content, "timestamp": iso(snowflake_time(message_id)),
        "edited_timestamp": None, "tts": False, "mention_everyone": mention_everyone,
        "mentions": mentions or [], "mention_roles": [str(r) for r in mention_roles or []],
        "attachments": attachments or [], "embeds": [], "pinned": False,
        "type": kind if kind is not None else (19 if reply_to else 0), "flags": flags,
        "components": [], "nonce": None,
    }
    if guild_id is not None:
        found["guild_id"] = str(guild_id)
    if author_member is not None:
        found["member"] = {k: v for k, v in author_member.items() if k != "user"}
    if webhook_id is not None:
        found["webhook_id"] = str(webhook_id)
    if reply_to is not None:
        found["message_reference"] = {"type": 0, "message_id": reply_to["id"],
                                      "channel_id": reply_to["channel_id"],
                                      "guild_id": reply_to.get("guild_id")}
        found["referenced_message"] = reply_to
    return found


_USER_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")
_EVERYONE = re.compile(r"@(everyone|here)\b")


def mentioned_ids(content: str) -> tuple[list[int], list[int], bool]:
    """(user ids, role ids, @everyone/@here) written in a message's content."""
    users = [int(found) for found in _USER_MENTION.findall(content)]
    roles = [int(found) for found in _ROLE_MENTION.findall(content)]
    return users, roles, bool(_EVERYONE.search(content))


def pings(content: str, allowed: dict[str, Any] | None) -> dict[str, Any]:
    """Whom Discord would notify for this content under these `allowed_mentions`.

    Without `allowed_mentions` Discord pings everything the content mentions; with them,
    only the kinds in `parse` and the ids listed under `users` / `roles`.
    """
    users, roles, everyone = mentioned_ids(content)
    if allowed is None:
        return {"users": users, "roles": roles, "everyone": everyone}
    parse = set(allowed.get("parse") or [])
    allowed_users = {int(u) for u in allowed.get("users") or []}
    allowed_roles = {int(r) for r in allowed.get("roles") or []}
    return {
        "users": [u for u in users if "users" in parse or u in allowed_users],
        "roles": [r for r in roles if "roles" in parse or r in allowed_roles],
        "everyone": everyone and "everyone" in parse,
    }
