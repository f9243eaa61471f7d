"""Rendering bot text for one adapter: document model → dialect → parts within its limit."""

from __future__ import annotations

import asyncio

from bridge.core.adapter import Capabilities
from bridge.core.binding import Binding
from bridge.text import Directory, split_for, to_platform


def render_parts(
    markdown: str,
    binding: Binding,
    capabilities: Capabilities,
    directory: Directory | None = None,
) -> list[str]:
    """The platform messages one logical output becomes (at least one, maybe empty text).

    `directory` (the adapter's, for this chat) turns a bot's `@Name` into a real mention.
    """
    rendered = to_platform(
        markdown, capabilities.dialect, directory, allow_everyone=binding.allow_everyone
    )
    if 2 * len(rendered) <= capabilities.max_length:
        # Fits however the platform counts (UTF-16 at most doubles the length): the
        # common short reply skips the splitter altogether.
        return [rendered]
    parts = split_for(rendered, capabilities.dialect, limit=capabilities.max_length)
    return parts or [rendered]


OFF_LOOP_CHARS = 20_000
"""Outputs at least this long are rendered in a worker thread (see `render_parts_soon`)."""


async def render_parts_soon(
    markdown: str,
    binding: Binding,
    capabilities: Capabilities,
    directory: Directory | None = None,
) -> list[str]:
    """`render_parts`, off the event loop for a long output.

    Rendering and splitting are pure CPU work that grows with the text: a 100,000-character
    reply takes a few hundred milliseconds, during which no other chat would get a turn. The
    one thread the bridge uses runs it; the interpreter switches back to the loop every few
    milliseconds, so other chats keep moving. The directory an adapter hands out is an
    immutable snapshot, safe to read from there.
    """
    if len(markdown) < OFF_LOOP_CHARS:
        return render_parts(markdown, binding, capabilities, directory)
    return await asyncio.to_thread(render_parts, markdown, binding, capabilities, directory)
