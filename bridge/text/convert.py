"""The public conversions: common Markdown → platform text, platform text → common Markdown.

This is the only place that knows which parser and renderer belong to which platform.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bridge.text.mentions import NO_DIRECTORY, Directory
from bridge.text.model import Document
from bridge.text.parse_discord import parse_discord
from bridge.text.parse_markdown import parse_markdown
from bridge.text.parse_slack import parse_slack
from bridge.text.parse_telegram import parse_telegram, parse_telegram_html
from bridge.text.platforms import Platform, platform_named
from bridge.text.render_base import Renderer, RenderOptions
from bridge.text.render_discord import DiscordRenderer
from bridge.text.render_html import (
    MatrixHtmlRenderer,
    TelegramHtmlRenderer,
    WebchatHtmlRenderer,
)
from bridge.text.render_markdown import MarkdownRenderer
from bridge.text.render_plain import PlainRenderer
from bridge.text.render_slack import SlackRenderer

_RENDERERS: Mapping[Platform, type[Renderer]] = {
    Platform.DISCORD: DiscordRenderer,
    Platform.SLACK: SlackRenderer,
    Platform.TELEGRAM: TelegramHtmlRenderer,
    Platform.WEBCHAT: WebchatHtmlRenderer,
    Platform.MATRIX: MarkdownRenderer,
    Platform.PLAIN: PlainRenderer,
}


def render(
    document: Document,
    platform: str,
    directory: Directory | None = None,
    *,
    allow_everyone: bool = False,
) -> str:
    """Render a Document in a platform's dialect."""
    renderer = _RENDERERS[platform_named(platform)]
    return renderer(RenderOptions(directory or NO_DIRECTORY, allow_everyone)).render(document)


def to_platform(
    markdown: str,
    platform: str,
    directory: Directory | None = None,
    *,
    allow_everyone: bool = False,
) -> str:
    """Turn the common Markdown a bot wrote into text the platform shows as intended.

    `@Name` mentions resolve through `directory`; everyone-style mentions are neutralized
    unless `allow_everyone` is set. Protocol blocks pass through unchanged.
    """
    target = platform_named(platform)
    return render(parse_markdown(_as_text(markdown)), target, directory,
                  allow_everyone=allow_everyone)


def parse(
    text: str,
    platform: str,
    entities: Sequence[Mapping[str, Any]] | None = None,
    directory: Directory | None = None,
) -> Document:
    """Parse a platform message into a Document.

    Telegram: with `entities` (Bot API JSON dicts, even an empty list) the text is the
    message's plain text; without, it is read as Telegram HTML. Webchat input is the common
    Markdown humans type into the page; plain text is taken literally.
    """
    target = platform_named(platform)
    text = _as_text(text)
    if target is Platform.DISCORD:
        return parse_discord(text, directory)
    if target is Platform.SLACK:
        return parse_slack(text, directory)
    if target is Platform.TELEGRAM:
        if entities is None:
            return parse_telegram_html(text, directory)
        return parse_telegram(text, entities, directory)
    if target in (Platform.WEBCHAT, Platform.MATRIX):
        return parse_markdown(text)
    return parse_telegram(text, [], directory)


def from_platform(
    text: str,
    platform: str,
    entities: Sequence[Mapping[str, Any]] | None = None,
    directory: Directory | None = None,
) -> str:
    """Turn a platform message into common Markdown with `@Name` mentions, for BCN."""
    document = parse(text, platform, entities, directory)
    return MarkdownRenderer(RenderOptions(directory or NO_DIRECTORY, True)).render(document)


def matrix_html(markdown: str, directory: Directory | None = None) -> str:
    """A Matrix message's `formatted_body` for its `body` (common Markdown, as rendered for
    `Platform.MATRIX`): the same document as HTML, `@Name`s the directory knows as pills."""
    renderer = MatrixHtmlRenderer(RenderOptions(directory or NO_DIRECTORY, False))
    return renderer.render(parse_markdown(_as_text(markdown)))


def _as_text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)
