"""Slack test fixtures; they live in slack_support (importable by the tests too)."""

from slack_support import fake, make_adapter, sink  # noqa: F401
