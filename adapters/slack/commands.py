"""Chat commands the Slack way: slash commands, and `@app ask …` where Slack has none.

A slash command is acked at once (Slack wants an answer within 3 s) and reaches the core as
a message `/ask Rules …` whose id is unique to that invocation. Its `response_url` is kept in
the account's durable state, so whichever bridge instance gets the core's answer (a notice
whose `reply_to` is that id) answers the invocation itself: privately where only the person
asking needs it (`/requests`, usage help, errors), in the channel where everyone should know
(`/stop`, `/new`). Threads have no slash commands, so `@app ask Rules …` there (or anywhere)
is read as `/ask Rules …`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bridge.config.sections import CommandNames

COMMAND_PREFIX = "command-"
"""Message ids of slash command invocations start with this (then the trigger id)."""

HELP_WORD = "help"

ResponseType = Literal["ephemeral", "in_channel"]


def addressed_command(text: str, bot_user_id: str, words: Collection[str]) -> str | None:
    """`<@app> ask Rules task` → `/ask Rules task`; None unless a known command word follows
    a leading mention of the app."""
    if not bot_user_id:
        return None
    match = re.match(
        rf"\s*<@{re.escape(bot_user_id)}(?:\|[^>]*)?>[\s:,]*([A-Za-z][A-Za-z0-9_]*)(.*)\Z",
        text,
        re.DOTALL,
    )
    if match is None:
        return None
    word, rest = match.group(1).lower(), match.group(2)
    if word not in words and word != HELP_WORD:
        return None
    if rest and not rest[0].isspace():
        return None  # `@app asked …` is a sentence, not `/ask`
    return f"/{word}{rest}"


def command_message_id(payload: Mapping[str, Any]) -> str:
    """A message id unique to this invocation (Slack gives each one its own trigger id)."""
    return COMMAND_PREFIX + str(payload.get("trigger_id") or "")


def response_type(command: str, names: CommandNames) -> ResponseType:
    """Where the bridge's answer goes: in the channel for what changes the channel for
    everyone (`/stop`, `/new`), privately for everything else."""
    word = command.lstrip("/").lower()
    enabled = names.enabled()
    shared = {enabled[role] for role in ("stop", "new") if role in enabled}
    return "in_channel" if word in shared else "ephemeral"


@dataclass(frozen=True, slots=True)
class PendingCommand:
    """A slash command whose answer has not been sent yet, as kept in the account state."""

    response_url: str
    channel: str
    response_type: ResponseType

    def to_record(self) -> dict[str, Any]:
        return {"response_url": self.response_url, "channel": self.channel,
                "response_type": self.response_type}

    @classmethod
    def from_record(cls, record: Mapping[str, Any] | None) -> PendingCommand | None:
        if not record or not record.get("response_url"):
            return None
        kind = record.get("response_type")
        return cls(str(record["response_url"]), str(record.get("channel") or ""),
                   "in_channel" if kind == "in_channel" else "ephemeral")


def state_key(message_id: str) -> str:
    return f"command:{message_id}"
