"""Shared values for the config tests (a module of its own: `conftest` names collide)."""

ENV = {
    "BCN_LINK_TOKEN": "link-token-do-not-print",
    "ECHO_BOT_TOKEN": "echo-token-do-not-print",
    "TELEGRAM_BOT_TOKEN": "123:telegram-token-do-not-print",
    "DISCORD_BOT_TOKEN": "discord-token-do-not-print",
    "SLACK_BOT_TOKEN": "xoxb-slack-token-do-not-print",
    "SLACK_APP_TOKEN": "xapp-slack-app-token-do-not-print",
}
"""The variables config/example.yaml needs; values tests check never appear in output."""
