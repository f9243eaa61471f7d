"""Slack: one app per workspace through slack-bolt, over Socket Mode or the Events API."""

from adapters.slack.adapter import SlackAdapter
from adapters.slack.config import SlackAccountConfig

__all__ = ["SlackAccountConfig", "SlackAdapter"]
