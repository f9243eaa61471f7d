"""Property tests: round trips through each dialect, well-formed splits, nothing ever raises."""

import html
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.text import (
    Code,
    CodeBlock,
    Document,
    Link,
    ListBlock,
    Mention,
    MentionKind,
    Paragraph,
    Quote,
    StaticDirectory,
    Style,
    Styled,
    Text,
    from_platform,
    length_on,
    parse_discord,
    parse_markdown,
    parse_slack,
    parse_telegram_html,
    render,
    split_for,
    to_platform,
)
from bridge.text.normalize import normalize_inlines
from bridge.text.render_base import RenderOptions
from bridge.text.render_markdown import MarkdownRenderer
from tests.text.test_text_split import fences_balanced, tags_balanced

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PLATFORMS = ["discord", "slack", "telegram", "webchat", "plain"]
NAMES = ["Mantis", "Lotbot", "ada_1"]
DIRECTORY = StaticDirectory({"Mantis": "101", "Lotbot": "202", "ada_1": "303"})
SLACK_DIRECTORY = StaticDirectory({"Mantis": "U101", "Lotbot": "U202", "ada_1": "U303"})

LETTERS = "abcxyzABC0129éß中"


def words(punctuation: str) -> st.SearchStrategy[str]:
    word = st.text(LETTERS + punctuation, min_size=1, max_size=6).filter(
        lambda w: w[0] in LETTERS and w[-1] in LETTERS
    )
    return st.lists(word, min_size=1, max_size=3).map(" ".join)


def inlines(styles: list[Style], punctuation: str, mention_ids: bool) -> st.SearchStrategy:
    leaf = st.one_of(
        words(punctuation).map(Text),
        st.text(LETTERS + " .", min_size=1, max_size=6).map(lambda c: Code(c.strip() or "c")),
        st.sampled_from(NAMES).map(
            lambda n: Mention(MentionKind.USER, n, DIRECTORY.id_for(n) if mention_ids else None)
        ),
        st.tuples(words(""), st.sampled_from(["https://ex.com/a", "http://x.org/p?q=1"])).map(
            lambda pair: Link(pair[1], (Text(pair[0]),))
        ),
    )

    def styled(children: st.SearchStrategy) -> st.SearchStrategy:
        return st.tuples(st.sampled_from(styles), st.lists(children, min_size=1, max_size=3)).map(
            lambda pair: Styled(pair[0], spaced(pair[1]))
        )

    return st.recursive(leaf, styled, max_leaves=6)


def spaced(nodes: list) -> tuple:
    """Separate nodes with a space, as real text does; no dialect can glue two styles."""
    out: list = []
    for node in nodes:
        if out:
            out.append(Text(" "))
        out.append(node)
    return tuple(out)


def documents(
    styles: list[Style], punctuation: str, mention_ids: bool, quotes: bool, lists: bool,
    languages: bool = True,
) -> st.SearchStrategy[Document]:
    paragraph = st.lists(inlines(styles, punctuation, mention_ids), min_size=1, max_size=4).map(
        lambda nodes: Paragraph(normalize_inlines(spaced(nodes)))
    )
    code_block = st.tuples(
        st.lists(st.text(LETTERS + " =<>&*_", min_size=1, max_size=12), min_size=1, max_size=3),
        st.sampled_from(["py", "js", ""] if languages else [""]),
    ).map(lambda pair: CodeBlock("\n".join(line.strip() or "x" for line in pair[0]), pair[1]))
    blocks = [paragraph, code_block]
    if quotes:
        blocks.append(st.lists(paragraph, min_size=1, max_size=2).map(lambda ps: Quote(tuple(ps))))
    if lists:
        blocks.append(
            st.tuples(st.lists(paragraph, min_size=1, max_size=3), st.booleans()).map(
                lambda pair: ListBlock(tuple((p,) for p in pair[0]), pair[1], 1)
            )
        )
    return st.lists(st.one_of(blocks), min_size=1, max_size=4).map(
        lambda bs: Document(tuple(bs))
    )


ALL_STYLES = list(Style)
SLACK_STYLES = [Style.BOLD, Style.ITALIC, Style.STRIKE]


@FAST
@given(documents(ALL_STYLES, "*_~|<>[]\\#-.!&`", True, quotes=True, lists=True))
def test_discord_round_trip(document: Document) -> None:
    rendered = render(document, "discord", DIRECTORY)
    assert parse_discord(rendered, DIRECTORY) == document


@FAST
@given(documents(SLACK_STYLES, "<>&.!#", True, quotes=True, lists=True, languages=False))
def test_slack_round_trip(document: Document) -> None:
    document = _with_ids(document, SLACK_DIRECTORY)
    rendered = render(document, "slack", SLACK_DIRECTORY)
    assert parse_slack(rendered, SLACK_DIRECTORY) == document


@FAST
@given(documents(ALL_STYLES, "*_~|<>[]\\#-.!&\"'", True, quotes=True, lists=False))
def test_telegram_html_round_trip(document: Document) -> None:
    rendered = render(document, "telegram", DIRECTORY)
    assert parse_telegram_html(rendered, DIRECTORY) == document


@FAST
@given(documents(SLACK_STYLES, "*_~<>[]\\#-.!&`", False, quotes=True, lists=True))
def test_markdown_round_trip(document: Document) -> None:
    rendered = MarkdownRenderer(RenderOptions()).render(document)
    assert parse_markdown(rendered) == document


def _with_ids(document: Document, directory: StaticDirectory) -> Document:
    import dataclasses

    def fix(node):
        if isinstance(node, Mention) and node.name:
            return dataclasses.replace(node, platform_id=directory.id_for(node.name))
        if dataclasses.is_dataclass(node):
            values = {}
            for field in dataclasses.fields(node):
                value = getattr(node, field.name)
                if isinstance(value, tuple):
                    value = tuple(
                        tuple(fix(v) for v in item) if isinstance(item, tuple) else fix(item)
                        for item in value
                    )
                values[field.name] = value
            return type(node)(**values)
        return node

    return fix(document)


hostile_text = st.lists(
    st.sampled_from(
        [
            *"ab *_~`|<>[]()\\@#&;:/.!-\n\t",
            *["```", "**", "__", "||", "<@1>", "<!here>", "&amp;", "😀", "e\u0301", "\u200d"],
            *["🇫🇷", "<b>", "</i>", "https://x.y/_a_", "[REQUEST → @Mantis]\n", "@everyone"],
            "<a href='javascript:x'>",
        ]
    ),
    max_size=40,
).map("".join) | st.text(max_size=60)

entities = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["bold", "italic", "pre", "code", "text_link", "mention",
                                     "text_mention", "blockquote", "spoiler", "url", "weird"]),
            "offset": st.integers(-2, 90),
            "length": st.integers(-1, 40),
        },
        optional={
            "url": st.sampled_from(["https://x.y", "javascript:alert(1)", "tg://user?id=5"]),
            "user": st.fixed_dictionaries({"id": st.integers(1, 9), "first_name": st.text()}),
            "language": st.sampled_from(["py", "", None]),
        },
    ),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(hostile_text, st.sampled_from(PLATFORMS), st.booleans())
def test_nothing_raises(text: str, platform: str, allow: bool) -> None:
    rendered = to_platform(text, platform, DIRECTORY, allow_everyone=allow)
    from_platform(text, platform, directory=DIRECTORY)
    from_platform(rendered, platform, directory=DIRECTORY)
    for part in split_for(rendered, platform, 24, marker=allow):
        assert length_on(part, platform) <= 24


@settings(max_examples=80, deadline=None)
@given(hostile_text, entities)
def test_telegram_entities_never_raise(text: str, raw_entities: list) -> None:
    from_platform(text, "telegram", raw_entities, DIRECTORY)


@settings(max_examples=80, deadline=None)
@given(hostile_text)
def test_no_html_injection(text: str) -> None:
    for platform in ("telegram", "webchat"):
        rendered = to_platform(text, platform, DIRECTORY)
        assert "<script" not in rendered.lower()
        for href in re.findall(r'href="([^"]*)"', rendered):
            assert html.unescape(href).lower().startswith(("http://", "https://", "mailto:", "tg:"))


split_source = st.lists(
    st.one_of(
        words("*_<>&").map(lambda w: w + " " + w),
        st.just("😀👨\u200d👩\u200d👧 e\u0301 🇫🇷🇩🇪"),
        st.text(LETTERS + " ", min_size=20, max_size=200).map(lambda body: f"```py\n{body}\n```"),
        st.text(LETTERS + " ", min_size=1, max_size=60).map(
            lambda body: f"```\n[REQUEST → @Mantis]\nFrom: Lot\nTask: {body}\nDepth: 1/5\n```"
        ),
        words("").map(lambda w: f"**{w}** _{w}_ > {w}"),
    ),
    min_size=1,
    max_size=12,
).map("\n\n".join)


@FAST
@given(split_source, st.sampled_from(PLATFORMS), st.integers(40, 400), st.booleans())
def test_split_parts_fit_and_are_well_formed(
    markdown: str, platform: str, limit: int, marker: bool
) -> None:
    rendered = to_platform(markdown, platform, DIRECTORY)
    parts = split_for(rendered, platform, limit, marker=marker)
    assert parts
    for part in parts:
        assert length_on(part, platform) <= limit
        if platform in ("telegram", "webchat"):
            assert tags_balanced(part)
        else:
            assert fences_balanced(part)
    if platform == "telegram":
        visible = "".join(html.unescape(re.sub(r"<[^>]+>", "", p)) for p in parts)
        if marker and len(parts) > 1:
            visible = re.sub(r"\n\(\d+/\d+\)", "", visible)
        original = html.unescape(re.sub(r"<[^>]+>", "", rendered))
        assert re.sub(r"\s", "", visible) == re.sub(r"\s", "", original)


# Shapes that once made a parser rescan to the end of the line at every position. The test only
# runs them: a quadratic path shows up as a suite that does not finish, not as a timing assertion.
LARGE_INPUTS = {"open brackets": "[" * 100_000}


@pytest.mark.parametrize("text", LARGE_INPUTS.values(), ids=LARGE_INPUTS.keys())
@pytest.mark.parametrize("platform", PLATFORMS)
def test_large_hostile_input_is_read(text: str, platform: str) -> None:
    assert from_platform(text, platform, directory=DIRECTORY)
