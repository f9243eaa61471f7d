"""Telegram test fixtures; they live in telegram_support (importable by the tests too)."""

from telegram_support import fake, make_adapter, received, start_system  # noqa: F401
