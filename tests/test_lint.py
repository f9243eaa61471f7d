"""The house rules a command can check, run with the suite so CI enforces them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLATFORM_IMPORT = re.compile(r"^\s*(import|from)\s+(discord|slack_bolt|slack_sdk|telegram)\b", re.M)


def test_ruff_is_clean() -> None:
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.fail("ruff is not installed; install the test extra: pip install -e '.[test]'")
    result = subprocess.run(
        [ruff, "check", "--output-format", "concise", "bridge", "adapters", "tests", "bench"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_core_never_imports_a_platform_library() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "bridge").rglob("*.py")
        if PLATFORM_IMPORT.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_core_imports_without_platform_libraries() -> None:
    """Importing the core must not pull in discord/slack/telegram as a side effect."""
    code = (
        "import sys, bridge.app, bridge.core.relay, bridge.cli;"
        "bad = [m for m in ('telegram', 'discord', 'slack_bolt', 'slack_sdk') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
