"""`${VAR}` expansion and `*_file` secrets, and how their failures are reported."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from bridge.config import ConfigError, load_section
from bridge.config.expand import expand_env


class Link(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str
    token: str | None = None
    name: str = "bridge"


def test_env_values_and_defaults(write_config) -> None:
    path = write_config(
        """
        bcn:
          url: ws://${HOST}:${PORT:-8765}/x
          token: ${TOKEN}
          name: ${EMPTY:-fallback}
        """
    )
    env = {"HOST": "bcn.local", "TOKEN": "t0k", "EMPTY": ""}
    link = load_section(path, "bcn", Link, environ=env)
    assert link == Link(url="ws://bcn.local:8765/x", token="t0k", name="fallback")


def test_dollar_dollar_brace_is_a_literal() -> None:
    assert expand_env("pa$${ss}", {}) == "pa${ss}"
    assert expand_env("cost $5, ${A}", {"A": "x"}) == "cost $5, x"


def test_unset_variable_names_file_line_key_and_variable(write_config) -> None:
    path = write_config("bcn:\n  url: ws://h\n  token: ${BCN_LINK_TOKEN}\n")
    with pytest.raises(ConfigError) as caught:
        load_section(path, "bcn", Link, environ={})
    (issue,) = caught.value.issues
    assert (issue.line, issue.path) == (3, "bcn.token")
    assert "environment variable BCN_LINK_TOKEN is not set" in issue.message
    assert str(issue).startswith(f"{path}:3: bcn.token: ")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("${1BAD}", "invalid environment reference"), ("${OPEN", "unclosed '${'")],
)
def test_malformed_references(write_config, value: str, expected: str) -> None:
    path = write_config(f"bcn:\n  url: '{value}'\n")
    with pytest.raises(ConfigError, match=re.escape(expected)):
        load_section(path, "bcn", Link, environ={})


def test_variables_in_list_items(write_config) -> None:
    class Tokens(BaseModel):
        tokens: list[str]

    path = write_config("t:\n  tokens: [a, '${B}']\n")
    assert load_section(path, "t", Tokens, environ={"B": "b"}).tokens == ["a", "b"]


def test_file_secret_is_read_and_one_newline_stripped(write_config, tmp_path: Path) -> None:
    (tmp_path / "tok").write_text("s3cret\n\n", encoding="utf-8")
    path = write_config(f"bcn:\n  url: ws://h\n  token_file: {tmp_path / 'tok'}\n")
    assert load_section(path, "bcn", Link, environ={}).token == "s3cret\n"


def test_file_secret_crlf_and_relative_path(write_config, tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "tok").write_bytes(b"abc\r\n")
    path = write_config("bcn:\n  url: ws://h\n  token_file: secrets/tok\n")
    assert load_section(path, "bcn", Link, environ={}).token == "abc"


def test_file_path_may_come_from_the_environment(write_config, tmp_path: Path) -> None:
    (tmp_path / "tok").write_text("from-file", encoding="utf-8")
    path = write_config("bcn:\n  url: ws://h\n  token_file: ${SECRETS}/tok\n")
    link = load_section(path, "bcn", Link, environ={"SECRETS": str(tmp_path)})
    assert link.token == "from-file"


def test_a_secret_file_under_an_unknown_users_home_is_a_clean_error(write_config) -> None:
    """`~nosuchuser/tok`: pathlib raises RuntimeError there (found by the any-shape test)."""
    path = write_config("bcn:\n  url: ws://h\n  token_file: ~no-such-user-here/tok\n")
    with pytest.raises(ConfigError) as caught:
        load_section(path, "bcn", Link, environ={})
    (issue,) = caught.value.issues
    assert issue.path == "bcn.token_file"
    assert issue.message == ("cannot read secret file: ~no-such-user-here names no user of "
                             "this machine")


def test_missing_secret_file_names_file_line_and_key(write_config, tmp_path: Path) -> None:
    path = write_config("bcn:\n  url: ws://h\n  token_file: /nonexistent/tg\n")
    with pytest.raises(ConfigError) as caught:
        load_section(path, "bcn", Link, environ={})
    (issue,) = caught.value.issues
    assert (issue.line, issue.path) == (3, "bcn.token_file")
    assert issue.message == "cannot read secret file /nonexistent/tg: file not found"


def test_secret_file_that_is_a_directory(write_config, tmp_path: Path) -> None:
    path = write_config(f"bcn:\n  url: ws://h\n  token_file: {tmp_path}\n")
    with pytest.raises(ConfigError, match="is a directory, expected a file"):
        load_section(path, "bcn", Link, environ={})


def test_value_and_file_together_is_an_error(write_config, tmp_path: Path) -> None:
    path = write_config("bcn:\n  url: ws://h\n  token: x\n  token_file: /x\n")
    with pytest.raises(ConfigError, match=r":4: bcn\.token_file: set either 'token' or"):
        load_section(path, "bcn", Link, environ={})


def test_file_key_for_an_unknown_key_stays_unknown(write_config) -> None:
    path = write_config("bcn:\n  url: ws://h\n  password_file: /x\n")
    with pytest.raises(ConfigError, match=r":3: bcn\.password_file: unknown key"):
        load_section(path, "bcn", Link, environ={})


def test_model_that_declares_the_file_key_keeps_it(write_config) -> None:
    class Account(BaseModel):
        model_config = ConfigDict(extra="forbid")
        token_file: str

    path = write_config("a:\n  token_file: /run/secrets/not-read\n")
    assert load_section(path, "a", Account, environ={}).token_file == "/run/secrets/not-read"


def test_file_keys_in_free_form_mappings(write_config, tmp_path: Path) -> None:
    class Puppets(BaseModel):
        puppets: dict[str, str]

    (tmp_path / "echo").write_text("echo-token\n", encoding="utf-8")
    path = write_config(f"p:\n  puppets:\n    Echo_file: {tmp_path / 'echo'}\n")
    assert load_section(path, "p", Puppets, environ={}).puppets == {"Echo": "echo-token"}


@given(st.text(alphabet=st.characters(blacklist_characters="$"), max_size=50))
def test_text_without_references_is_unchanged(text: str) -> None:
    assert expand_env(text, {}) == text


def test_a_secret_file_path_with_a_nul_is_a_clear_error(tmp_path) -> None:
    """Found by the any-shape property test: `token_file: "\\x00"` raised ValueError."""
    from bridge.config import ConfigError
    from bridge.config.schema import load_config

    config = tmp_path / "bridge.yaml"
    config.write_text('hub:\nbcn:\n  token_file: "\\0"\n', encoding="utf-8")
    try:
        load_config(config)
    except ConfigError as exc:
        assert "NUL character" in str(exc) and "bcn.token_file" in str(exc)
    else:
        raise AssertionError("a NUL in a file path must be refused")
