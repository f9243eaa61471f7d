"""The core's `Outbound` → Matrix event content (pure).

`body` is the text as the core rendered it for Matrix (common Markdown: what clients
without HTML and other bots read, protocol fences intact) and `formatted_body` is the same
document as HTML with pills. A streamed reply is one event: each later text is an
`m.replace` of it whose `m.new_content` is the whole new message.
"""

from __future__ import annotations

from typing import Any

HTML = "org.matrix.custom.html"


def body_content(text: str, html: str, msgtype: str = "m.text") -> dict[str, Any]:
    return {"msgtype": msgtype, "body": text, "format": HTML, "formatted_body": html}


def message_content(text: str, html: str, *, msgtype: str = "m.text",
                    thread_id: str | None = None, reply_to: str | None = None,
                    ) -> dict[str, Any]:
    """A new message; in `thread_id`'s thread (replying in it to `reply_to` when given)."""
    content = body_content(text, html, msgtype)
    if thread_id:
        content["m.relates_to"] = {
            "rel_type": "m.thread", "event_id": thread_id,
            "is_falling_back": reply_to is None,
            "m.in_reply_to": {"event_id": reply_to or thread_id},
        }
    elif reply_to:
        content["m.relates_to"] = {"m.in_reply_to": {"event_id": reply_to}}
    return content


def edit_content(event_id: str, text: str, html: str, *,
                 msgtype: str = "m.text") -> dict[str, Any]:
    """Replace `event_id`'s text (a thread message stays in its thread: the relation of the
    original holds)."""
    return {
        **body_content(f"* {text}", f"* {html}", msgtype),
        "m.new_content": body_content(text, html, msgtype),
        "m.relates_to": {"rel_type": "m.replace", "event_id": event_id},
    }


def with_label(label: str, text: str, html: str) -> tuple[str, str]:
    """Text posted by the bridge user on someone's behalf starts with their name."""
    if not label:
        return text, html
    from html import escape

    return f"**{label}**\n{text}", f"<strong>{escape(label)}</strong><br>{html}"
