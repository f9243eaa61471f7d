"""Discord test fixtures; they live in discord_support (importable by the tests too)."""

from discord_support import fake, make_adapter, received, server, state  # noqa: F401
