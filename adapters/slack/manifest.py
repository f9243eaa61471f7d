"""The Slack app manifest for the bridge: paste it at api.slack.com/apps → Create New App.

It asks for exactly what the adapter uses: the scopes to read channel messages, post them
(under each bot's own name: `chat:write.customize`), look up names and take slash commands;
the message events of every kind of conversation plus `member_joined_channel` (so the log
says when the app is invited somewhere); one slash command per enabled chat command; and
either Socket Mode or the bridge's public Request URL; and interactivity, for the buttons of
a bot's question and its own-words modal (in HTTP mode at `/slack/<account>/interactivity`).
Plain data, no Slack library: the CLI prints it without importing slack-bolt.
"""

from __future__ import annotations

from typing import Any, Literal

from bridge.config.sections import CommandNames

BOT_SCOPES = (
    "channels:history",
    "groups:history",
    "im:history",
    "mpim:history",
    "channels:read",
    "groups:read",
    "chat:write",
    "chat:write.customize",
    "users:read",
    "commands",
)

BOT_EVENTS = (
    "message.channels",
    "message.groups",
    "message.im",
    "message.mpim",
    "member_joined_channel",
)

COMMAND_TEXT: dict[str, tuple[str, str]] = {
    "ask": ("Ask a bot to do something, tracked as a request", "<Bot> <task>"),
    "requests": ("List the open bot requests in this channel", ""),
    "stop": ("Stop the bot reply that is running here", ""),
    "new": ("Start a fresh bot conversation in this channel", ""),
}
"""Each chat command's description and usage hint, as Slack's command menu shows them."""

PLACEHOLDER_URL = "https://bridge.example.com"


def interactivity_path_for(events_path: str) -> str:
    """Where button presses and modal submissions go in HTTP mode: `/slack/<account>/
    interactivity` next to `/slack/<account>/events`; a custom events path that does not
    end in `/events` takes them itself."""
    if events_path.endswith("/events"):
        return events_path.removesuffix("/events") + "/interactivity"
    return events_path


def manifest(
    *,
    mode: Literal["socket", "http"] = "socket",
    name: str = "bcn-bridge",
    public_url: str | None = None,
    path: str = "/slack/main/events",
    commands: CommandNames | None = None,
) -> dict[str, Any]:
    """The manifest as a mapping (Slack takes it as YAML or JSON)."""
    request_url = (public_url or PLACEHOLDER_URL).rstrip("/") + path
    slash_commands = []
    for role, word in (commands or CommandNames()).enabled().items():
        description, hint = COMMAND_TEXT[role]
        command: dict[str, Any] = {"command": f"/{word}", "description": description}
        if hint:
            command["usage_hint"] = hint
        if mode == "http":
            command["url"] = request_url
        command["should_escape"] = True
        slash_commands.append(command)
    events: dict[str, Any] = {"bot_events": list(BOT_EVENTS)}
    interactivity: dict[str, Any] = {"is_enabled": True}  # a card's buttons and modal
    if mode == "http":
        events = {"request_url": request_url, **events}
        interactivity["request_url"] = (
            (public_url or PLACEHOLDER_URL).rstrip("/") + interactivity_path_for(path))
    return {
        "display_information": {
            "name": name,
            "description": "Brings the bots of a Bot Coordination Network into Slack",
        },
        "features": {
            # People may write to the app directly (a DM is bindable like a channel: the
            # message.im events above), which Slack allows only with the Messages tab on.
            "app_home": {"home_tab_enabled": False, "messages_tab_enabled": True,
                         "messages_tab_read_only_enabled": False},
            "bot_user": {"display_name": name, "always_online": True},
            "slash_commands": slash_commands,
        },
        "oauth_config": {"scopes": {"bot": list(BOT_SCOPES)}},
        "settings": {
            "event_subscriptions": events,
            "interactivity": interactivity,
            "org_deploy_enabled": False,
            "socket_mode_enabled": mode == "socket",
            "token_rotation_enabled": False,
        },
    }
