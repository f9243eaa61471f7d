"""Where a bot keeps its BCN token between runs.

BCN asks engines to persist the token and present it on reconnect so BCN restores
the same bot identity. The file holds only the token and is created readable by its owner
alone, because the token is a credential.
"""

from __future__ import annotations

import os
from pathlib import Path


def load_token(path: str | os.PathLike[str]) -> str | None:
    """Return the saved token, or None when there is no usable one yet."""
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read token file {os.fspath(path)!r}: {exc}") from exc
    return text or None


def save_token(path: str | os.PathLike[str], token: str) -> None:
    """Write the token with mode 0600, replacing the old file atomically.

    The temporary file is created 0600 from the start (not chmod-ed afterwards), so the
    token is never readable by others, not even for a moment.
    """
    target = Path(path)
    if target.parent and not target.parent.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(token + "\n")
        os.chmod(temp, 0o600)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
