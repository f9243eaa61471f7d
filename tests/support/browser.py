"""What every browser test shares: Debian's Chromium, the flags it runs headless with, and
the marks that skip a test where it is not installed (`.ci/run` installs it)."""

from __future__ import annotations

import os

import pytest

CHROMIUM = "/usr/bin/chromium"
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
        not os.path.exists(CHROMIUM), reason=f"needs Debian's chromium at {CHROMIUM}"
    ),
]
"""`pytestmark = BROWSER_MARKS` in a browser test module."""
