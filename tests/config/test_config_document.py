"""Reading YAML: line numbers for every key and item, and clear errors for bad files."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.config import ConfigError
from bridge.config.document import parse_document, read_document


def test_every_key_and_item_has_its_line() -> None:
    doc = parse_document("a: 1\nb:\n  - x: 2\n    y: [3, 4]\n  - 5\n")
    assert doc.data == {"a": 1, "b": [{"x": 2, "y": [3, 4]}, 5]}
    assert doc.lines[("a",)] == 1
    assert doc.lines[("b", 0)] == 3
    assert doc.lines[("b", 0, "y")] == 4
    assert doc.lines[("b", 1)] == 5
    assert doc.line_of(("b", 0, "missing", "deeper")) == 3


def test_anchors_and_merge_keys_work() -> None:
    doc = parse_document("base: &b {k: 1}\nother:\n  <<: *b\n  z: 2\n")
    assert doc.data["other"] == {"k": 1, "z": 2}


def test_duplicate_key_is_an_error_naming_both_lines(write_config) -> None:
    path = write_config("bcn:\n  url: embedded\n  url: ws://x\n")
    with pytest.raises(ConfigError) as caught:
        read_document(path)
    (issue,) = caught.value.issues
    assert (issue.file, issue.line, issue.path) == (str(path), 3, "bcn.url")
    assert "duplicate key (first set on line 2)" in issue.message


def test_syntax_error_names_file_line_and_column(write_config) -> None:
    path = write_config("bcn:\n  url: embedded\n bad: [\n")
    with pytest.raises(ConfigError) as caught:
        read_document(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:3:2: YAML syntax error: the indentation does not match")


@pytest.mark.parametrize(
    ("text", "where", "plain"),
    [
        ("hub:\n\tlisten: x\n", ":2:1:", "a tab: YAML indents with spaces only"),
        ("web:\n  listen: a\n   bad: b\n", ":3:7:", "a ':' where no new key can start"),
        ('bcn:\n  url: "ws://x\nstore: y\n', ":4:1:", "a quote is not closed (opened on line 2)"),
        ("hub:\n  groups: [a, b\nweb: {}\n", ":3:4:", "a [list] that is not closed"),
        ("bindings:\n  - chat: x\n - y\n", ":3:2:", "the indentation does not match"),
    ],
)
def test_syntax_errors_in_plain_words(write_config, text: str, where: str, plain: str) -> None:
    path = write_config(text)
    with pytest.raises(ConfigError) as caught:
        read_document(path)
    message = str(caught.value)
    assert message.startswith(f"{path}{where} YAML syntax error: "), message
    assert plain in message
    assert "[" in message  # PyYAML's own words stay, in brackets, for searching


def test_unknown_tag_is_an_error_with_its_line() -> None:
    with pytest.raises(ConfigError, match=r"^x\.yaml:2: store: could not determine"):
        parse_document("a: 1\nstore: !vault secret/x\n", "x.yaml")


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match=r"nope\.yaml: config file not found"):
        read_document(path)


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="expected a config file, got a directory"):
        read_document(tmp_path)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"title: caf\xe9\n")
    with pytest.raises(ConfigError, match="cannot read config file: UnicodeDecodeError"):
        read_document(path)


def test_empty_file_is_an_empty_mapping() -> None:
    assert parse_document("# only a comment\n").data == {}


@given(st.text(max_size=200))
def test_any_text_parses_or_raises_config_error(text: str) -> None:
    try:
        parse_document(text)
    except ConfigError as exc:
        assert exc.issues
