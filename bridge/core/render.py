"""Rendering bot text for one adapter: document model → dialect → parts within its limit."""

from __future__ import annotations

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
