"""The BCN size policy, in one place: how large a frame may be, and how much of one
message the hub passes on.

Every peer — the hub's `/ws/bot` and `/ws/channel`, the bot SDK, the bridge's channel
link — accepts frames up to `MAX_FRAME_BYTES`. Before this was one number the hub took
8 MB while the SDK took aiohttp's default 4 MB, so one bot's 6 MB final, passed on whole
to the other bots, disconnected every one of them (issue 31).

The hub never forwards more than `MAX_FORWARDED_CHARS` of one message: longer text is cut
at a line break with the same notice the relay uses for `relay.max_reply_chars`. The
figure is chosen so that what the hub sends always fits a frame: a bot receives the text
twice (`message.content` and `session_context.message`), and JSON escapes a character
into at most 6 bytes (`\\u0001`), so 2 × 6 × 512 Ki = 6 MiB of text, with 2 MiB left for
the rest of the frame.

A frame above the maximum is refused for its sender only: the hub closes that socket with
1009 (message too big) and says the limit; the SDK does not send one at all
(`FrameTooLarge`), and the run it belonged to ends with an error instead.
"""

from __future__ import annotations

from bridge.fastjson import dumps
from bridge.text.cut import truncated

MAX_FRAME_BYTES = 8 * 1024 * 1024
"""The largest WebSocket message any BCN peer sends or accepts."""

MAX_FORWARDED_CHARS = 512 * 1024
"""The most characters of one message the hub passes on to another peer."""

WORST_ESCAPE_BYTES = 6
"""The most bytes one character takes in a frame (`\\u001f`; UTF-8 needs at most 4)."""


class FrameTooLarge(ValueError):
    """A frame the peer would refuse: raised before sending it, so the socket survives."""


NOTICE_ROOM = 200
"""Characters kept free for the notice, so a cut text is itself within the limit."""


def forwardable(text: str) -> str:
    """`text` as the hub passes it on: at most `MAX_FORWARDED_CHARS`, the cut said in a
    notice. Text already within the limit comes back as it is, so cutting twice (a final
    to the chat, then on to the bots) changes nothing more."""
    if len(text) <= MAX_FORWARDED_CHARS:
        return text
    return truncated(text, MAX_FORWARDED_CHARS - NOTICE_ROOM)


ENVELOPE_BYTES = 64 * 1024
"""Room left in a frame for everything around the one large text it carries."""


def check_fits(what: str, text: str) -> None:
    """Raise `FrameTooLarge` when a frame carrying `text` would be above the maximum.

    The exact size is measured only for text long enough to matter.
    """
    room = MAX_FRAME_BYTES - ENVELOPE_BYTES
    if len(text) * WORST_ESCAPE_BYTES <= room:
        return
    size = len(dumps(text).encode("utf-8", "surrogatepass"))
    if size > room:
        raise FrameTooLarge(
            f"{what} of {size:,} bytes is too large to send: BCN frames are at most "
            f"{MAX_FRAME_BYTES:,} bytes")
