"""Telegram: bot accounts through python-telegram-bot, polling or webhook."""

from adapters.telegram.adapter import TelegramAdapter
from adapters.telegram.config import TelegramAccountConfig

__all__ = ["TelegramAccountConfig", "TelegramAdapter"]
