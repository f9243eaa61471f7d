"""Shared values for the config tests (a module of its own: `conftest` names collide)."""

ENV = {
    "BCN_LINK_TOKEN": "link-token-do-not-print",
    "ECHO_BOT_TOKEN": "echo-token-do-not-print",
    "TELEGRAM_BOT_TOKEN": "123:telegram-token-do-not-print",
}
"""The variables config/example.yaml needs; values tests check never appear in output."""
