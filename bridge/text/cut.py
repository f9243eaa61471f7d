"""Cutting an over-long text with a line that says what was left out.

One helper for every place that must bound a message: the relay before a platform
(`relay.max_reply_chars`) and the hub before it forwards a message to other peers
(`bridge.bcn.limits.MAX_FORWARDED_CHARS`), so a reader sees the same notice either way.
"""

from __future__ import annotations


def truncated(text: str, limit: int) -> str:
    """At most `limit` characters of a reply, and a line saying what was left out.

    The cut falls on a line break near the limit when there is one, so a reply does not end
    mid-word; a code block left open is closed by the renderer like any other.
    """
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", limit - 2000, limit)
    kept = text[: cut if cut > 0 else limit].rstrip()
    return (f"{kept}\n\n… (reply truncated: {len(text):,} characters; "
            f"the first {len(kept):,} are shown)")
