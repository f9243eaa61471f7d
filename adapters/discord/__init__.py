"""Discord: one bot account (or some of its shards) through discord.py."""

from adapters.discord.adapter import DiscordAdapter
from adapters.discord.config import DiscordAccountConfig

__all__ = ["DiscordAccountConfig", "DiscordAdapter"]
