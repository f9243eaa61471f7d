"""The browser tests find Chromium where a distribution puts it, not only at Debian's path."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.browser import BROWSER_VARIABLE, find_chromium


def executable(folder: Path, name: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n", encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("name", ["chromium", "chromium-browser", "google-chrome"])
def test_chromium_is_found_on_the_path_by_any_of_its_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.delenv(BROWSER_VARIABLE, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_chromium() is None
    browser = executable(tmp_path, name)
    assert find_chromium() == str(browser)


def test_the_variable_names_a_browser_off_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    chosen = executable(tmp_path, "my-chrome")
    monkeypatch.setenv(BROWSER_VARIABLE, str(chosen))
    assert find_chromium() == str(chosen)
