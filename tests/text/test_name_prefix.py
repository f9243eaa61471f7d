"""The bold sender name above a reply, in each platform's dialect."""

from __future__ import annotations

import pytest

from bridge.text.prefix import NAME_LIMIT, PREFIX_ALLOWANCE, name_prefix, short_name
from bridge.text.split import length_on


@pytest.mark.parametrize(
    ("platform", "expected"),
    [
        ("discord", "**Rex \\*the\\* \\<bot\\>**\n"),
        ("slack", "*Rex *the* &lt;bot&gt;*\n"),
        ("telegram", "<b>Rex *the* &lt;bot&gt;</b>\n"),
        ("plain", "Rex *the* <bot>\n"),
    ],
)
def test_the_name_is_bold_and_escaped_in_the_dialect(platform: str, expected: str) -> None:
    assert name_prefix("Rex *the* <bot>", platform) == expected


def test_an_unnamed_sender_gets_no_prefix() -> None:
    assert name_prefix("  ", "discord") == ""


def test_names_are_one_line_and_cut_as_the_platform_counts() -> None:
    assert short_name("Many\n  spaced   words", "slack") == "Many spaced words"
    fox = short_name("🦊" * 100, "telegram")
    assert fox.endswith("…") and len(fox.encode("utf-16-le")) // 2 <= NAME_LIMIT
    assert len(short_name("🦊" * 100, "discord")) == NAME_LIMIT
    assert short_name("x" * NAME_LIMIT, "discord") == "x" * NAME_LIMIT


@pytest.mark.parametrize("platform", ["discord", "slack", "telegram"])
@pytest.mark.parametrize("char", ["&", "*", "<", "🦊", "a"])
def test_the_longest_prefix_fits_the_allowance(platform: str, char: str) -> None:
    prefix = name_prefix(char * 200, platform)
    assert "…" in prefix
    assert length_on(prefix, platform) <= PREFIX_ALLOWANCE
