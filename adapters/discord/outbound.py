"""How a bot's reply looks in Discord: the webhook name, who it may ping, the name prefix.

Pure functions; the adapter does the posting. Every post and every edit carries
`allowed_mentions`, built here from the rendered text itself: the users the bot addressed
(the core rendered their `@Name` as `<@id>` through the adapter's directory) may be pinged,
`@everyone`, `@here` and roles only where the binding allows it. A partial webhook has no
client default to fall back on, so nothing is ever left to Discord's "ping everything".
"""

from __future__ import annotations

import re

import discord

from bridge.core.binding import Binding
from bridge.text.prefix import PREFIX_ALLOWANCE, with_name_prefix

DISCORD_MAX_TEXT = 2000
"""Discord's limit for one message's content."""

MAX_TEXT = DISCORD_MAX_TEXT - PREFIX_ALLOWANCE
"""What the core may put in one message: a name prefix (without Manage Webhooks) still fits."""

USERNAME_MAX = 80
FALLBACK_USERNAME = "bot"
_FORBIDDEN_IN_NAMES = {
    # Discord refuses a webhook username containing these words (any case). The lookalike
    # letters (Cyrillic о and е) keep the name readable while no longer matching.
    "discord": "disc\u043erd",
    "clyde": "clyd\u0435",
}
_FORBIDDEN = re.compile("|".join(_FORBIDDEN_IN_NAMES), re.IGNORECASE)
_USER_MENTION = re.compile(r"<@!?(\d+)>")


def webhook_username(label: str) -> str:
    """A name Discord accepts for a webhook post: one line, 1–80 characters, without the
    words Discord reserves."""
    name = " ".join(label.split())
    name = _FORBIDDEN.sub(lambda m: _keep_case(m.group(0)), name)
    if len(name) > USERNAME_MAX:
        name = name[: USERNAME_MAX - 1].rstrip() + "…"
    return name or FALLBACK_USERNAME


def _keep_case(word: str) -> str:
    """The lookalike spelling with the original's capitals (`Discord` → `Discоrd`)."""
    replacement = _FORBIDDEN_IN_NAMES[word.casefold()]
    return "".join(
        new.upper() if old.isupper() else new for old, new in zip(word, replacement, strict=True)
    )


def mentioned_user_ids(text: str) -> list[int]:
    """The users a rendered reply addresses by `<@id>`, in order, once each."""
    return list(dict.fromkeys(int(found) for found in _USER_MENTION.findall(text)))


def allowed_mentions(text: str, binding: Binding) -> discord.AllowedMentions:
    """Ping the addressed users only; everyone, here and roles only with `allow_everyone`."""
    return discord.AllowedMentions(
        everyone=binding.allow_everyone,
        roles=binding.allow_everyone,
        users=[discord.Object(user_id) for user_id in mentioned_user_ids(text)],
        replied_user=False,
    )


def with_prefix(label: str, text: str) -> str:
    """`**Name**` on its own line above the reply, for posts made as the bridge's bot."""
    return with_name_prefix(label, text, "discord")
