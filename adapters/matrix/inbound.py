"""Matrix room events → the core's `Inbound` (pure functions over the event JSON).

A person's message is `m.room.message` with a plain `body` and, when formatted, an HTML
`formatted_body`. Pills (`<a href="https://matrix.to/#/@user:server">Name</a>`) become
`@Name` in the text and in `mentions`; a thread reply (`m.thread`) keeps its root as the
thread, a reply (`m.in_reply_to`) names the message it answers, and an edit (`m.replace`)
is the original message's id with its `m.new_content`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from bridge.core.model import Inbound, Sender

CHANNEL_TYPE = "matrix"
TEXT_TYPES = frozenset({"m.text", "m.notice", "m.emote"})

_PILL = re.compile(
    r"""<a\s[^>]*href=["']https://matrix\.to/#/(?P<id>(?:@|%40)[^"'?]+)[^"']*["'][^>]*>"""
    r"""(?P<label>.*?)</a>""", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
_REPLY_FALLBACK = re.compile(r"<mx-reply>.*?</mx-reply>", re.DOTALL | re.IGNORECASE)

NameOf = Callable[[str], str | None]
"""A Matrix user id → the name people see (a bot's name for a puppet), if known."""


def pills(formatted_body: str) -> list[tuple[str, str]]:
    """The user pills of an HTML body, in order: (user id, the link's text)."""
    found = []
    for match in _PILL.finditer(_REPLY_FALLBACK.sub("", formatted_body)):
        user_id = match.group("id").replace("%40", "@").replace("%3A", ":").replace("%3a", ":")
        label = html.unescape(_TAG.sub("", match.group("label"))).strip()
        found.append((user_id, label))
    return found


def without_reply_fallback(body: str) -> str:
    """A reply's body may start with `> <@user> quoted` lines and a blank line (the
    fallback older clients add); the person's own words are what follows."""
    if not body.startswith("> "):
        return body
    lines = body.split("\n")
    for index, line in enumerate(lines):
        if not line.startswith(">"):
            return "\n".join(lines[index + 1 if line == "" else index:])
    return body


def with_mentions(body: str, formatted_body: str | None,
                  name_of: NameOf) -> tuple[str, tuple[str, ...]]:
    """`body` with each pill's text as `@Name`, and the names mentioned."""
    if not formatted_body:
        return body, ()
    names: list[str] = []
    text = body
    position = 0
    for user_id, label in pills(formatted_body):
        name = name_of(user_id) or label.lstrip("@") or user_id
        names.append(name)
        if not label:
            continue
        at = text.find(label, position)
        if at < 0:
            continue
        start = at - 1 if at > 0 and text[at - 1] == "@" else at
        replacement = f"@{name}"
        text = text[:start] + replacement + text[at + len(label):]
        position = start + len(replacement)
    return text, tuple(dict.fromkeys(names))


def relation(content: dict[str, Any]) -> dict[str, Any]:
    relates = content.get("m.relates_to")
    return relates if isinstance(relates, dict) else {}


def to_inbound(event: dict[str, Any], *, account: str, chat_id: str, sender_name: str,
               name_of: NameOf) -> Inbound | None:
    """The core's message for a person's `m.room.message`, or None for anything else
    (state events, reactions, media without text)."""
    if event.get("type") != "m.room.message" or "state_key" in event:
        return None
    content = event.get("content")
    if not isinstance(content, dict):
        return None
    relates = relation(content)
    is_edit = relates.get("rel_type") == "m.replace" and isinstance(relates.get("event_id"), str)
    if is_edit:
        new_content = content.get("m.new_content")
        if not isinstance(new_content, dict):
            return None
        shown = new_content
    else:
        shown = content
    if shown.get("msgtype") not in TEXT_TYPES or not isinstance(shown.get("body"), str):
        return None
    formatted = shown.get("formatted_body") if shown.get("format") == (
        "org.matrix.custom.html") else None
    body = shown["body"]
    if not is_edit and isinstance(relates.get("m.in_reply_to"), dict):
        body = without_reply_fallback(body)
    text, mentions = with_mentions(body, formatted if isinstance(formatted, str) else None,
                                   name_of)
    if shown.get("msgtype") == "m.emote":
        text = f"*{sender_name} {text}*"
    thread_id = reply_to = None
    if relates.get("rel_type") == "m.thread" and isinstance(relates.get("event_id"), str):
        thread_id = relates["event_id"]
    in_reply = relates.get("m.in_reply_to")
    if isinstance(in_reply, dict) and isinstance(in_reply.get("event_id"), str) and not (
            thread_id and relates.get("is_falling_back")):
        reply_to = in_reply["event_id"]
    sender = str(event.get("sender", ""))
    stamp = event.get("origin_server_ts")
    timestamp = (datetime.fromtimestamp(stamp / 1000, UTC) if isinstance(stamp, int)
                 else datetime.now(UTC))
    return Inbound(
        channel_type=CHANNEL_TYPE,
        account=account,
        chat_id=chat_id,
        message_id=relates["event_id"] if is_edit else str(event.get("event_id", "")),
        sender=Sender(id=sender, name=sender_name),
        text=text,
        thread_id=thread_id,
        mentions=mentions,
        reply_to=reply_to,
        timestamp=timestamp,
        is_edit=is_edit,
        raw=event,
    )
