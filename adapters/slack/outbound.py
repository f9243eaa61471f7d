"""How a bot's reply looks in Slack: under the bot's own name, or under a bold name line.

With the `chat:write.customize` scope, `chat.postMessage` takes a `username` (and an icon),
so each BCN bot appears as itself. Without it (or with a binding's `display: prefix`) the app
posts the reply under `*Name*` on its own line, and edits keep that line. The text itself is
already Slack mrkdwn, rendered and split by the core; it is sent as `text` only, never as
blocks, so protocol blocks reach other bots exactly as written.
"""

from __future__ import annotations

from typing import Any

from adapters.slack.config import SlackAccountConfig
from bridge.core.model import Outbound
from bridge.text.prefix import short_name, with_name_prefix

MAX_TEXT = 4000
"""Where the core splits a reply: Slack's advice for one readable message (it truncates at
40,000). A name line, when used, adds at most `PREFIX_ALLOWANCE` characters on top."""


def under_own_name(out: Outbound, can_customize: bool) -> bool:
    """Post with `username` (True) or with a name line in the text (False)."""
    return can_customize and out.binding.display != "prefix" and bool(out.sender_label.strip())


def shown_text(out: Outbound, can_customize: bool) -> str:
    """The message text: the reply, under a bold name line when the name cannot be the
    sender's."""
    if under_own_name(out, can_customize) or not out.sender_label.strip():
        return out.text
    return with_name_prefix(out.sender_label, out.text, "slack")


def post_fields(
    out: Outbound, can_customize: bool, settings: SlackAccountConfig
) -> dict[str, Any]:
    """`chat.postMessage` arguments besides channel and thread."""
    fields: dict[str, Any] = {"text": shown_text(out, can_customize)}
    if under_own_name(out, can_customize):
        fields["username"] = short_name(out.sender_label, "slack")
        fields.update(settings.icon_for(out.sender_label))
    return fields
