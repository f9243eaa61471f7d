"""Slack message events → the core's `Inbound`.

Pure functions over the event JSON: no network, no state. A new message, an edit
(`message_changed`, the new text in `event.message`) and a delete (`message_deleted`, what
it said in `event.previous_message`) all become one `SlackMessage` view first, so the adapter
filters its own messages and looks up names in one place for all three. Files travel as
their Slack id and `url_private` without any query string: Slack file URLs need the bot
token in a header to download, and a query could carry a public-link secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from adapters.slack.commands import command_message_id
from adapters.slack.people import USER_TOKEN
from bridge.core.model import Attachment, Inbound, Sender
from bridge.text import Directory, from_platform

CHANNEL_TYPE = "slack"

RELAYED_SUBTYPES = frozenset({"bot_message", "file_share", "thread_broadcast", "me_message"})
"""Message subtypes people write; joins, topic changes, pins and the like are not relayed."""

SLACKBOT = "USLACKBOT"


@dataclass(frozen=True, slots=True)
class SlackMessage:
    """One message event in the adapter's terms, whatever its kind.

    `ts` is the message's own id (for an edit or delete, the original message's); `message`
    is its body (the new one for an edit, the last known one for a delete); `when` is when
    this happened (the edit's own time for an edit, so each edit is a distinct event).
    """

    channel: str
    ts: str
    message: Mapping[str, Any]
    when: str
    is_edit: bool = False
    is_delete: bool = False


def message_of(event: Mapping[str, Any]) -> SlackMessage | None:
    """The message a `message` event is about; None for events that are no message of anyone's
    (joins, topic changes) and for `message_changed`s that edit nothing (link previews, a
    thread's reply count)."""
    channel = str(event.get("channel") or "")
    subtype = event.get("subtype")
    if not channel:
        return None
    if subtype == "message_changed":
        new, old = event.get("message"), event.get("previous_message") or {}
        if not isinstance(new, Mapping) or not new.get("ts"):
            return None
        if new.get("subtype") == "tombstone":  # a thread's parent deleted under its replies
            return SlackMessage(channel, str(new["ts"]), old, str(event.get("ts") or ""),
                                is_delete=True)
        edited = new.get("edited") if isinstance(new.get("edited"), Mapping) else {}
        if not edited and new.get("text") == (old.get("text") if old else None):
            return None
        when = str(edited.get("ts") or event.get("event_ts") or event.get("ts") or new["ts"])
        return SlackMessage(channel, str(new["ts"]), new, when, is_edit=True)
    if subtype == "message_deleted":
        old = event.get("previous_message")
        ts = event.get("deleted_ts") or (old.get("ts") if isinstance(old, Mapping) else None)
        if not ts:
            return None
        return SlackMessage(channel, str(ts), old if isinstance(old, Mapping) else {},
                            str(event.get("ts") or ts), is_delete=True)
    if subtype and subtype not in RELAYED_SUBTYPES:
        return None
    if not event.get("ts"):
        return None
    return SlackMessage(channel, str(event["ts"]), event, str(event["ts"]))


def sender_id(message: Mapping[str, Any]) -> str:
    """The author's user id; a bot without a user (legacy integrations) by its bot id."""
    return str(message.get("user") or message.get("bot_id") or "")


def is_bot(message: Mapping[str, Any]) -> bool:
    return (
        bool(message.get("bot_id"))
        or message.get("subtype") == "bot_message"
        or message.get("user") == SLACKBOT
    )


def bot_label(message: Mapping[str, Any]) -> str | None:
    """A bot's name as the message itself shows it: its custom `username`, else its profile."""
    if message.get("username"):
        return str(message["username"])
    profile = message.get("bot_profile")
    if isinstance(profile, Mapping) and profile.get("name"):
        return str(profile["name"])
    return None


def thread_of(message: Mapping[str, Any]) -> str | None:
    """The thread a reply belongs to; a thread's parent itself is a channel message."""
    thread_ts, ts = message.get("thread_ts"), message.get("ts")
    if thread_ts and thread_ts != ts:
        return str(thread_ts)
    return None


def attachments_of(message: Mapping[str, Any]) -> tuple[Attachment, ...]:
    found = []
    for file in message.get("files") or ():
        if not isinstance(file, Mapping) or file.get("mode") == "tombstone":
            continue
        mime = str(file.get("mimetype") or "") or None
        kind = (mime or "").partition("/")[0]
        found.append(
            Attachment(
                type=kind if kind in ("image", "video", "audio") else "file",
                url=without_query(file.get("url_private") or file.get("permalink")),
                name=file.get("name") or file.get("title"),
                mime=mime,
                size=file.get("size") if isinstance(file.get("size"), int) else None,
                file_id=file.get("id"),
            )
        )
    return tuple(found)


def without_query(url: Any) -> str | None:
    if not isinstance(url, str) or not url:
        return None
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def mentioned_names(text: str, directory: Directory) -> tuple[str, ...]:
    """The people a message's `<@U…>` tokens name, by the names the directory knows."""
    names = [directory.name_for(user_id) or user_id for user_id in USER_TOKEN.findall(text)]
    return tuple(dict.fromkeys(names))


def slack_time(ts: str) -> datetime:
    try:
        return datetime.fromtimestamp(float(ts), UTC)
    except (TypeError, ValueError, OverflowError):
        return datetime.now(UTC)


def to_inbound(
    found: SlackMessage,
    *,
    account: str,
    sender: Sender,
    directory: Directory,
    text: str | None = None,
) -> Inbound | None:
    """Normalize one message; None when it carries nothing (no text, no file).

    `text` replaces the message's own mrkdwn (an addressed command rewritten to `/ask …`).
    """
    message = found.message
    raw_text = str(message.get("text") or "") if text is None else text
    attachments = () if found.is_delete else attachments_of(message)
    if not raw_text and not attachments and not found.is_delete:
        return None
    return Inbound(
        channel_type=CHANNEL_TYPE,
        account=account,
        chat_id=found.channel,
        message_id=found.ts,
        sender=sender,
        text=from_platform(raw_text, "slack", directory=directory),
        thread_id=thread_of(message),
        mentions=mentioned_names(raw_text, directory),
        attachments=attachments,
        timestamp=slack_time(found.when),
        is_edit=found.is_edit,
        is_delete=found.is_delete,
        raw=dict(message),
    )


def command_inbound(
    payload: Mapping[str, Any], *, account: str, sender: Sender, directory: Directory
) -> Inbound:
    """A slash command as the message `/ask Rules …`, with an id unique to the invocation."""
    arguments = str(payload.get("text") or "")
    command = str(payload.get("command") or "").strip()
    text = f"{command} {from_platform(arguments, 'slack', directory=directory)}".strip()
    return Inbound(
        channel_type=CHANNEL_TYPE,
        account=account,
        chat_id=str(payload.get("channel_id") or ""),
        message_id=command_message_id(payload),
        sender=sender,
        text=text,
        mentions=mentioned_names(arguments, directory),
        raw=dict(payload),
    )
