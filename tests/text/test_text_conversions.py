"""Tricky cases per platform for to_platform / from_platform."""

import pytest

from bridge.text import (
    PLATFORM_LIMITS,
    ZERO_WIDTH_SPACE,
    StaticDirectory,
    from_platform,
    to_platform,
)

DIRECTORY = StaticDirectory({"Mantis": "123", "Lotbot": "456"})
SLACK_DIRECTORY = StaticDirectory({"Mantis": "U123", "general": "C1"})

PROTOCOL = (
    "```\n[REQUEST → @Mantis]\nFrom: Lot_bot\nRequestId: lot-1\n"
    "Task: check a*b* & <x>\nDepth: 1/5\n```"
)

TO_PLATFORM_CASES = [
    # (markdown, platform, expected)
    ("**bold** and *it*", "discord", "**bold** and _it_"),
    ("**bold _nested_**", "discord", "**bold _nested_**"),
    ("a literal \\* star", "discord", "a literal \\* star"),
    ("unbalanced **bold", "discord", "unbalanced \\*\\*bold"),
    ("see https://ex.com/a_b_c_ now", "discord", "see https://ex.com/a_b_c_ now"),
    ("snake_case_name", "discord", "snake\\_case\\_name"),
    ("hi @Mantis", "discord", "hi <@123>"),
    ("hi @Nobody", "discord", "hi @Nobody"),
    ("@everyone look", "discord", f"@{ZERO_WIDTH_SPACE}everyone look"),
    ("@here look", "discord", f"@{ZERO_WIDTH_SPACE}here look"),
    ("raw <@999> ping", "discord", "raw \\<@999\\> ping"),
    ("~~gone~~", "discord", "~~gone~~"),
    ("# Title", "discord", "**Title**"),
    ("1\\. not a list", "discord", "1\\. not a list"),
    ("**bold** and *it*", "slack", "*bold* and _it_"),
    ("~~gone~~", "slack", "~gone~"),
    ("a < b & c > d", "slack", "a &lt; b &amp; c &gt; d"),
    ("[site](https://ex.com/a_b)", "slack", "<https://ex.com/a_b|site>"),
    ("hi @Mantis", "slack", "hi <@U123>"),
    ("@here now", "slack", "@here now"),
    ("@channel now", "slack", "@channel now"),
    ("**b** *i* ~~s~~ `c`", "telegram", "<b>b</b> <i>i</i> <s>s</s> <code>c</code>"),
    ("x <b>not bold</b> & y", "telegram", "x &lt;b&gt;not bold&lt;/b&gt; &amp; y"),
    ("```py\nif a < b:\n```", "telegram",
     '<pre><code class="language-py">if a &lt; b:</code></pre>'),
    ("[l](https://ex.com/?a=1&b=\"2\")", "telegram",
     '<a href="https://ex.com/?a=1&amp;b=%222%22">l</a>'),
    ("[bad](javascript:alert(1))", "telegram", "[bad](javascript:alert(1))"),
    ("> quoted *it*", "telegram", "<blockquote>quoted <i>it</i></blockquote>"),
    ("hi @Mantis", "telegram", '<a href="tg://user?id=123">Mantis</a>'),
    ("<script>alert(1)</script>", "webchat", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"),
    ('[x](https://a.b/"onmouseover=")', "webchat",
     '<p><a href="https://a.b/%22onmouseover=%22" rel="noopener noreferrer nofollow" '
     'target="_blank">x</a></p>'),
    ("hi @Mantis", "webchat", '<p>hi <span class="mention mention-user">@Mantis</span></p>'),
    ("**b** [l](https://x.y) `c`", "plain", "b l (https://x.y) c"),
    ("- one\n- two", "plain", "• one\n• two"),
]


@pytest.mark.parametrize(("markdown", "platform", "expected"), TO_PLATFORM_CASES)
def test_to_platform_cases(markdown: str, platform: str, expected: str) -> None:
    directory = SLACK_DIRECTORY if platform == "slack" else DIRECTORY
    rendered = to_platform(markdown, platform, directory)
    if platform == "telegram" and "@Mantis" in markdown:
        assert expected in rendered
    else:
        assert rendered == expected


def test_everyone_allowed_when_asked() -> None:
    assert to_platform("@everyone up", "discord", allow_everyone=True) == "@everyone up"
    assert to_platform("@here up", "slack", allow_everyone=True) == "<!here> up"
    assert to_platform("@channel up", "slack", allow_everyone=True) == "<!channel> up"


def test_telegram_username_directory_entry_renders_as_at_text() -> None:
    directory = StaticDirectory({"Mantis": "@mantis_bot"})
    assert to_platform("ask @Mantis", "telegram", directory) == "ask @mantis_bot"


@pytest.mark.parametrize("platform", ["discord", "slack", "telegram", "webchat", "plain"])
def test_protocol_block_survives_every_platform(platform: str) -> None:
    markdown = f"Sending this:\n\n{PROTOCOL}\n\nthanks @Mantis"
    rendered = to_platform(markdown, platform, DIRECTORY)
    shown = rendered
    if platform == "slack":
        shown = rendered.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    if platform in ("telegram", "webchat"):
        import html
        import re

        shown = html.unescape(re.sub(r"<[^>]+>", "", rendered))
    assert PROTOCOL in shown


def test_protocol_block_on_telegram_is_not_a_pre_entity() -> None:
    rendered = to_platform(PROTOCOL, "telegram")
    assert "<pre>" not in rendered and rendered.startswith("```\n[REQUEST → @Mantis]")


def test_unfenced_protocol_message_passes_verbatim() -> None:
    text = "[RESPONSE -> Lotbot]\nFrom: Mantis\nStatus: done\nResult: a_b *c*"
    assert to_platform(text, "discord", DIRECTORY) == text


def test_unknown_platform_names_valid_ones() -> None:
    with pytest.raises(ValueError, match="discord, slack, telegram, webchat, matrix, plain"):
        to_platform("hi", "irc")


def test_limits_are_exported() -> None:
    assert PLATFORM_LIMITS["discord"] == 2000
    assert PLATFORM_LIMITS["telegram"] == 4096
    assert PLATFORM_LIMITS["slack"] == 40000


FROM_PLATFORM_CASES = [
    # (text, platform, expected markdown)
    ("hey <@123> and <@!456>", "discord", "hey @Mantis and @Lotbot"),
    ("role <@&77> in <#88>", "discord", "role @77 in #88"),
    ("**b** __u__ ||spoiler|| ~~s~~ *i* _j_", "discord", "**b** u spoiler ~~s~~ _i_ _j_"),
    ("\\*not bold\\*", "discord", "\\*not bold\\*"),
    ("@everyone hi", "discord", "@everyone hi"),
    ("```py\nx = 1\n```", "discord", "```py\nx = 1\n```"),
    ("> quote\nafter", "discord", "> quote\n\nafter"),
    ("url https://x.com/a_b_c", "discord", "url https://x.com/a_b_c"),
    ("hi <@U123|mantis>", "slack", "hi @Mantis"),
    ("hi <@U999|someone>", "slack", "hi @someone"),
    ("in <#C1|general> <!here>", "slack", "in #general @here"),
    ("<https://x.com/a_b|the site> and <https://y.com>", "slack",
     "[the site](https://x.com/a_b) and <https://y.com>"),
    ("a &lt; b &amp;&amp; c &gt; d", "slack", "a \\< b && c > d"),
    ("*bold* _it_ ~strike~ `co&amp;de`", "slack", "**bold** _it_ ~~strike~~ `co&de`"),
    ("&gt; quoted", "slack", "> quoted"),
    # Link text holds no unescaped `[`: the link is the innermost `[b](…)`, as on Discord.
    ("[a [b](https://x.com)", "discord", "\\[a [b](https://x.com)"),
    ("<b>b</b> &amp; <i>i</i>", "telegram", "**b** & _i_"),
    # `<![` without a marked-section keyword made html.parser raise AssertionError.
    ("a <![ b <![x", "telegram", "a \\<!\\[ b \\<!\\[x"),
    ("<b>a<![x</b>", "telegram", "**a\\<!\\[x**"),
    ("<![CDATA[hidden]]>shown", "telegram", "shown"),
    ("**typed** `x`", "webchat", "**typed** `x`"),
    ("1 * 2 * 3", "plain", "1 \\* 2 \\* 3"),
]


@pytest.mark.parametrize(("text", "platform", "expected"), FROM_PLATFORM_CASES)
def test_from_platform_cases(text: str, platform: str, expected: str) -> None:
    directory = SLACK_DIRECTORY if platform == "slack" else DIRECTORY
    assert from_platform(text, platform, directory=directory) == expected


def test_telegram_entities_with_emoji_offsets() -> None:
    text = "👋🏽 hi Bob, see 🇫🇷 docs and @alice"
    # UTF-16: "👋🏽" is 4 units, so "hi" starts at 5; "Bob" at 8; "🇫🇷" is 4 units.
    entities = [
        {"type": "bold", "offset": 5, "length": 2},
        {"type": "text_mention", "offset": 8, "length": 3, "user": {"id": 42, "first_name": "Bob"}},
        {"type": "text_link", "offset": 22, "length": 4, "url": "https://docs.example"},
        {"type": "mention", "offset": 31, "length": 6},
    ]
    directory = StaticDirectory({"Bobby": "42"})
    assert from_platform(text, "telegram", entities, directory) == (
        "👋🏽 **hi** @Bobby, see 🇫🇷 [docs](https://docs.example) and @alice"
    )


def test_telegram_pre_entity_with_protocol_header_gets_its_fences_back() -> None:
    body = "[REQUEST → @Mantis]\nFrom: Lotbot\nRequestId: lot-1\nTask: go\nDepth: 1/5"
    text = f"please:\n{body}"
    entities = [{"type": "pre", "offset": 8, "length": len(body)}]
    assert from_platform(text, "telegram", entities) == f"please:\n\n```\n{body}\n```"


def test_telegram_literal_fenced_protocol_is_kept_verbatim() -> None:
    assert from_platform(PROTOCOL, "telegram", []) == PROTOCOL


def test_telegram_bad_entities_are_ignored_not_fatal() -> None:
    entities = [
        {"type": "bold", "offset": 100, "length": 5},
        {"type": "italic", "offset": "x", "length": 1},
        {"offset": 0, "length": 1},
        {"type": "bold", "offset": 1, "length": 0},
        {"type": "pre", "offset": 0, "length": 3, "language": None},
    ]
    assert from_platform("abc def", "telegram", entities) == "```\nabc\n```\n\ndef"


def test_telegram_entity_offset_inside_surrogate_pair_does_not_cut_it() -> None:
    result = from_platform("😀x", "telegram", [{"type": "bold", "offset": 1, "length": 2}])
    assert "😀" in result
