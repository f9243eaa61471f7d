"""Every validation error names the file, the line, the key path and what was expected."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from bridge.config import ConfigError, ConfigIssue, load_section


class Protocol(BaseModel):
    model_config = ConfigDict(extra="forbid")
    deliver: Literal["natural", "raw"] = "natural"


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    group: str
    retries: int = Field(3, ge=0)
    enabled: bool = True
    protocol: Protocol = Protocol()


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[Item] = []
    password: SecretStr | None = None
    api_token: str | None = None


def _issues(write_config, body: str, environ: dict[str, str] | None = None) -> list[ConfigIssue]:
    path = write_config(body)
    with pytest.raises(ConfigError) as caught:
        load_section(path, "s", Section, environ=environ or {})
    for issue in caught.value.issues:
        assert issue.file == str(path)
    return list(caught.value.issues)


def _one(write_config, body: str, environ: dict[str, str] | None = None) -> ConfigIssue:
    (issue,) = _issues(write_config, body, environ)
    return issue


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[a, b]", "expected a string, got a list"),
        ("{x: 1}", "expected a string, got a mapping"),
        ("42", 'expected a string, got the number 42 (quote it: "42")'),
        ("null", "expected a string, got nothing (null)"),
    ],
)
def test_wrong_type_for_a_string(write_config, value: str, message: str) -> None:
    issue = _one(write_config, f"s:\n  items:\n    - group: {value}\n")
    assert (issue.line, issue.path, issue.message) == (3, "s.items[0].group", message)


def test_other_types(write_config) -> None:
    issues = _issues(
        write_config,
        """
        s:
          items:
            - group: ops
              retries: many
              enabled: maybe
              protocol: natural
        """,
    )
    assert [(i.line, i.path, i.message) for i in issues] == [
        (4, "s.items[0].retries", "expected an integer, got the string 'many'"),
        (5, "s.items[0].enabled", "expected true or false, got the string 'maybe'"),
        (6, "s.items[0].protocol", "expected a mapping (key: value), got the string 'natural'"),
    ]


def test_list_expected(write_config) -> None:
    issue = _one(write_config, "s:\n  items: {group: x}\n")
    assert (issue.line, issue.path, issue.message) == (
        2,
        "s.items",
        "expected a list, got a mapping",
    )


def test_bounds_and_choices(write_config) -> None:
    issues = _issues(
        write_config,
        "s:\n  items:\n    - group: a\n      retries: -1\n      protocol: {deliver: prose}\n",
    )
    assert [(i.line, i.path, i.message) for i in issues] == [
        (4, "s.items[0].retries", "expected greater than or equal to 0, got the number -1"),
        (5, "s.items[0].protocol.deliver", "expected 'natural' or 'raw', got the string 'prose'"),
    ]


def test_missing_key_points_at_its_parent(write_config) -> None:
    issue = _one(write_config, "s:\n  items:\n    - retries: 1\n")
    assert (issue.line, issue.path, issue.message) == (
        3,
        "s.items[0].group",
        "required key is missing",
    )


def test_unknown_key_with_did_you_mean(write_config) -> None:
    issue = _one(write_config, "s:\n  items:\n    - group: a\n      grop: b\n")
    assert (issue.line, issue.path) == (4, "s.items[0].grop")
    assert issue.message == "unknown key 'grop'; did you mean 'group'?"


def test_unknown_key_without_a_close_match_lists_the_keys(write_config) -> None:
    issue = _one(write_config, "s:\n  items:\n    - group: a\n      zzz: b\n")
    assert issue.message == "unknown key 'zzz'; expected one of: enabled, group, protocol, retries"


def test_several_errors_are_reported_together_in_file_order(write_config) -> None:
    path = write_config(
        "s:\n  items:\n    - group: [x]\n    - grp: y\n  passwrd: z\n",
    )
    with pytest.raises(ConfigError) as caught:
        load_section(path, "s", Section, environ={})
    text = str(caught.value)
    assert text.splitlines()[0] == "4 problems in the config:"
    lines = [issue.line for issue in caught.value.issues]
    assert lines == sorted(lines)
    assert f"{path}:4: s.items[1].grp: unknown key 'grp'; did you mean 'group'?" in text
    assert f"{path}:5: s.passwrd: unknown key 'passwrd'; did you mean 'password'?" in text


def test_missing_section(write_config) -> None:
    path = write_config("other: 1\n")
    with pytest.raises(ConfigError, match=r"bridge\.yaml:1: missing section 's:'"):
        load_section(path, "s", Section)


def test_top_level_must_be_a_mapping(write_config) -> None:
    path = write_config("- a\n- b\n")
    with pytest.raises(ConfigError, match="expected a mapping of sections at the top level"):
        load_section(path, "s", Section)


def test_secret_values_never_appear_in_errors(write_config) -> None:
    secret = "hunter2-very-secret"
    issues = _issues(
        write_config,
        f"""
        s:
          password: [{secret}]
          api_token: {{value: {secret}}}
          items:
            - group: ${{FROM_ENV}}
              retries: ${{PLAIN}}
        """,
        environ={"FROM_ENV": secret, "PLAIN": "three"},
    )
    text = str(ConfigError(issues))
    assert secret not in text
    # A plain value from the environment is shown (only secrets are masked), so it can be fixed.
    assert "s.items[0].retries: expected an integer, got the string 'three'" in text
    assert "s.password" in text and "s.api_token" in text


def test_secret_key_with_wrong_scalar_hides_the_value(write_config) -> None:
    class Tokens(BaseModel):
        link_tokens: list[int]

    path = write_config("s:\n  link_tokens: [not-a-number-secret]\n")
    with pytest.raises(ConfigError) as caught:
        load_section(path, "s", Tokens)
    assert "not-a-number-secret" not in str(caught.value)
    assert "s.link_tokens[0]: expected an integer, got a string (value hidden)" in str(caught.value)


class Echoing(BaseModel):
    """Validators that quote what they refuse, as people write them."""

    url: str = ""
    rooms: list[str] = []
    api_key: str = ""

    @field_validator("url", "api_key")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith("ws"):
            raise ValueError(f"{value!r} is not a ws:// URL")
        return value

    @field_validator("rooms")
    @classmethod
    def _rooms(cls, rooms: list[str]) -> list[str]:
        for room in rooms:
            if " " in room:
                raise ValueError(f"room names have no spaces; {room[:12]!r} has")
        return rooms


def test_validator_messages_never_echo_secrets(write_config) -> None:
    secret = "https://bot:hunter2-very-secret@example"  # credentials in a URL: a secret
    path = write_config(
        """
        s:
          url: ${URL}
          rooms: [lobby, "${ROOM}"]
          api_key: http-typed-in-the-file-secret
        """
    )
    with pytest.raises(ConfigError) as caught:
        load_section(path, "s", Echoing, environ={"URL": secret, "ROOM": "big room number one"})

    text = str(caught.value)
    assert "hunter2" not in text and "typed-in-the-file" not in text
    assert "s.url: '***' is not a ws:// URL" in text
    assert "s.rooms: room names have no spaces; 'big room num' has" in text  # not a secret
    assert "s.api_key: '***' is not a ws:// URL" in text
