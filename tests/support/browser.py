"""What every browser test shares: a system Chromium, the flags it runs headless with, and
the marks that skip a test where none is installed (`.ci/run` installs Debian's)."""

from __future__ import annotations

import os
import shutil

import pytest

BROWSER_VARIABLE = "BCN_TEST_CHROMIUM"
"""The path of the Chromium (or Chrome) to drive, where it is not on the PATH."""
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable",
                 "chrome")
"""What Chromium is called on the PATH: Debian, Ubuntu and Fedora packages, and Chrome."""


def find_chromium() -> str | None:
    """The browser to drive: `$BCN_TEST_CHROMIUM`, else the first of `BROWSER_NAMES` on the
    PATH, else None (the browser tests are then skipped, saying how to point at one)."""
    chosen = os.environ.get(BROWSER_VARIABLE)
    if chosen:
        return chosen
    return next((found for name in BROWSER_NAMES if (found := shutil.which(name))), None)


CHROMIUM = find_chromium() or "chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
BACKGROUND_TAB_ARGS = [
    "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
]
"""For a test whose page waits in a background tab while another tab is used."""

BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.skipif(
        find_chromium() is None,
        reason=f"needs Chromium: none of {', '.join(BROWSER_NAMES)} is on the PATH "
               f"(or set {BROWSER_VARIABLE} to its path)",
    ),
]
"""`pytestmark = BROWSER_MARKS` in a browser test module."""
