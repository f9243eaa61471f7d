"""The platforms text can be rendered for, their length limits and how each one counts."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType


class Platform(StrEnum):
    DISCORD = "discord"
    SLACK = "slack"
    TELEGRAM = "telegram"
    WEBCHAT = "webchat"
    MATRIX = "matrix"
    """`body`: common Markdown, as Matrix clients write it; `formatted_body` is its HTML
    (`matrix_html`)."""
    PLAIN = "plain"


class Counting(StrEnum):
    """The unit a platform's length limit is measured in."""

    CODE_POINTS = "code points"
    UTF16_UNITS = "utf-16 code units of the visible text"


PLATFORM_LIMITS: Mapping[str, int] = MappingProxyType(
    {
        Platform.DISCORD: 2000,
        Platform.SLACK: 40000,
        Platform.TELEGRAM: 4096,
        Platform.WEBCHAT: 16000,
        Platform.MATRIX: 8000,
        Platform.PLAIN: 1_000_000,
    }
)

PLATFORM_COUNTING: Mapping[str, Counting] = MappingProxyType(
    {
        Platform.DISCORD: Counting.CODE_POINTS,
        Platform.SLACK: Counting.CODE_POINTS,
        Platform.TELEGRAM: Counting.UTF16_UNITS,
        Platform.WEBCHAT: Counting.CODE_POINTS,
        Platform.MATRIX: Counting.CODE_POINTS,
        Platform.PLAIN: Counting.CODE_POINTS,
    }
)

SLACK_BLOCK_LIMIT = 3000
"""Slack accepts 40,000 characters of message text, but a section block's text only 3000."""

TELEGRAM_CAPTION_LIMIT = 1024


_BY_NAME: Mapping[str, Platform] = MappingProxyType({p.value: p for p in Platform})


def platform_named(name: str) -> Platform:
    """The Platform for a name, or a ValueError that lists the valid names."""
    found = _BY_NAME.get(name)  # the usual case, on every reply: a name spelt as the code does
    if found is not None:
        return found
    try:
        return Platform(str(name).strip().lower())
    except ValueError:
        valid = ", ".join(p.value for p in Platform)
        raise ValueError(f"unknown platform {name!r}; expected one of: {valid}") from None


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units: characters outside the BMP count twice."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def char_weight(char: str, counting: Counting) -> int:
    if counting is Counting.UTF16_UNITS and ord(char) > 0xFFFF:
        return 2
    return 1
