"""A secret still holding the example's placeholder (`change-me-…`, `replace-with-…`, as in
deploy/bcn.env.example) is refused at load, naming its variable or file, never its value."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from bridge.config import ConfigError, load_section


class Link(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str
    token: str | None = None


@pytest.mark.parametrize("value", [
    "change-me-to-a-long-random-string", "CHANGEME", "123456789:replace-with-the-token",
])
def test_a_placeholder_in_the_environment_is_refused_by_name(write_config, value: str) -> None:
    path = write_config("bcn:\n  url: ws://h\n  token: ${BCN_LINK_TOKEN}\n")
    with pytest.raises(ConfigError) as caught:
        load_section(path, "bcn", Link, environ={"BCN_LINK_TOKEN": value})
    (issue,) = caught.value.issues
    assert (issue.line, issue.path) == (3, "bcn.token")
    assert "environment variable BCN_LINK_TOKEN still holds the example's placeholder" \
        in issue.message
    assert value not in str(caught.value)


def test_a_placeholder_in_a_secret_file_is_refused(write_config, tmp_path: Path) -> None:
    secret = tmp_path / "link.token"
    secret.write_text("change-me\n", encoding="utf-8")
    path = write_config(f"bcn:\n  url: ws://h\n  token_file: {secret}\n")
    with pytest.raises(ConfigError, match=f"secret file {secret} still holds the example"):
        load_section(path, "bcn", Link, environ={})


def test_real_values_pass(write_config, tmp_path: Path) -> None:
    path = write_config("bcn:\n  url: ws://h\n  token: ${BCN_LINK_TOKEN}\n")
    token = "9f2c6e0b8d41a7c35e10f4b2d9a8c7e6"  # `openssl rand -hex 16`
    link = load_section(path, "bcn", Link, environ={"BCN_LINK_TOKEN": token})
    assert link.token == token
