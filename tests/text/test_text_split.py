"""Splitting rendered text at platform limits: table cases."""

import re
from html.parser import HTMLParser

import pytest

from bridge.text import length_on, split_for, to_platform

PROTOCOL = "```\n[RESPONSE → @Lotbot]\nFrom: Mantis\nRequestId: lot-1\nStatus: done\n" \
           "Result: " + "ok " * 30 + "\nDepth: 2/5\n```"


class TagBalance(HTMLParser):
    """Records whether every opened tag is closed in order."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.balanced = True

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag != "br":
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.balanced = False


def tags_balanced(part: str) -> bool:
    checker = TagBalance()
    checker.feed(part)
    checker.close()
    return checker.balanced and not checker.stack


def fences_balanced(part: str) -> bool:
    return sum(1 for line in part.split("\n") if line.strip().startswith("```")) % 2 == 0


def test_short_text_is_one_part() -> None:
    assert split_for("hello", "discord") == ["hello"]
    assert split_for("", "discord") == []


def test_prefers_paragraph_then_line_then_word() -> None:
    text = "first paragraph here\n\nsecond paragraph that is longer"
    assert split_for(text, "discord", 40) == ["first paragraph here",
                                              "second paragraph that is longer"]
    assert split_for("one two three four five six", "plain", 16) == [
        "one two three", "four five six"]


def test_ten_thousand_char_code_block_reopens_fence_with_language() -> None:
    code = "\n".join(f"value_{i} = {i} * 2" for i in range(600))
    rendered = to_platform(f"```python\n{code}\n```", "discord")
    parts = split_for(rendered, "discord")
    assert len(parts) > 1
    for part in parts:
        assert len(part) <= 2000
        assert part.startswith("```python\n") and part.endswith("\n```")
    rejoined = "\n".join(part.removeprefix("```python\n").removesuffix("\n```") for part in parts)
    assert rejoined == code


def test_single_line_longer_than_limit_is_hard_cut_inside_fence() -> None:
    rendered = to_platform("```\n" + "x" * 5000 + "\n```", "discord")
    parts = split_for(rendered, "discord")
    assert all(len(p) <= 2000 and fences_balanced(p) for p in parts)
    assert "".join(p.replace("```", "").replace("\n", "") for p in parts) == "x" * 5000


def test_telegram_counts_utf16_units_of_visible_text() -> None:
    assert length_on("<b>😀</b> &amp;", "telegram") == 4
    parts = split_for("😀" * 30, "telegram", 20)
    assert [length_on(p, "telegram") for p in parts] == [20, 20, 20]
    assert "".join(parts) == "😀" * 30


def test_split_never_separates_combining_marks_or_zwj_sequences() -> None:
    family = "👨\u200d👩\u200d👧"
    accented = "e\u0301"
    for cluster in (family, accented):
        text = cluster * 20
        for part in split_for(text, "plain", 17):
            assert part.startswith(cluster[0])
            assert not part.endswith("\u200d")


def test_html_parts_close_and_reopen_tags() -> None:
    rendered = to_platform("**" + ("bold words " * 80).strip() + "**", "telegram")
    parts = split_for(rendered, "telegram", 200)
    assert len(parts) > 1
    for part in parts:
        assert part.startswith("<b>") and part.endswith("</b>")
        assert tags_balanced(part)
        assert length_on(part, "telegram") <= 200


def test_webchat_parts_count_markup_and_stay_balanced() -> None:
    rendered = to_platform("\n\n".join(f"para *{i}* " + "w " * 30 for i in range(20)), "webchat")
    parts = split_for(rendered, "webchat", 300)
    assert all(len(p) <= 300 and tags_balanced(p) for p in parts)


def test_protocol_block_is_never_split_when_it_fits() -> None:
    rendered = "intro " * 40 + "\n\n" + PROTOCOL + "\n\n" + "outro " * 40
    for limit in (260, 300, 400):
        parts = split_for(rendered, "discord", limit)
        assert any(PROTOCOL in part for part in parts), limit


def test_oversized_protocol_block_is_split_with_balanced_fences() -> None:
    parts = split_for(PROTOCOL, "discord", 60)
    assert len(parts) > 1 and all(fences_balanced(p) and len(p) <= 60 for p in parts)


def test_marker_is_counted_within_limit() -> None:
    text = " ".join(f"word{i}" for i in range(400))
    parts = split_for(text, "discord", 100, marker=True)
    total = len(parts)
    assert total > 9
    for number, part in enumerate(parts, 1):
        assert len(part) <= 100
        assert part.endswith(f"\n({number}/{total})")
    assert split_for("short", "discord", marker=True) == ["short"]


def test_bad_limit_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="limit"):
        split_for("x", "discord", 3)
    with pytest.raises(ValueError, match="unknown platform"):
        split_for("x", "irc")


def test_slack_default_limit_and_words() -> None:
    text = ("lorem ipsum " * 5000).strip()
    parts = split_for(text, "slack")
    assert all(len(p) <= 40000 for p in parts)
    assert re.sub(r"\s+", " ", " ".join(parts)) == text
