"""The link that adds the bridge's bot to a server with exactly the permissions it uses.

Scopes: `bot` (the bot user joins) and `applications.commands` (its slash commands may be
registered there). Permissions, each for a reason the docs give:
View Channels and Read Message History (see messages, catch up after a restart), Send
Messages and Send Messages in Threads (notices, and replies when no webhook can be used),
Manage Webhooks (post each bot's reply under the bot's own name), Embed Links (link previews
in the bot's own posts).
"""

from __future__ import annotations

import base64
import binascii

import discord

from adapters.discord.config import DiscordAccountConfig

SCOPES = ("bot", "applications.commands")


def bridge_permissions() -> discord.Permissions:
    return discord.Permissions(
        view_channel=True,
        read_message_history=True,
        send_messages=True,
        send_messages_in_threads=True,
        manage_webhooks=True,
        embed_links=True,
    )


def application_id(config: DiscordAccountConfig) -> str | None:
    """The configured id, else the bot's user id encoded in the token's first part (a bot's
    user id is its application's id)."""
    if config.application_id:
        return config.application_id
    head = config.token.get_secret_value().partition(".")[0]
    try:
        decoded = base64.b64decode(head + "=" * (-len(head) % 4), validate=False).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    return decoded if decoded.isdigit() else None


def invite_url(client_id: str) -> str:
    return discord.utils.oauth_url(
        client_id, permissions=bridge_permissions(), scopes=SCOPES
    )
