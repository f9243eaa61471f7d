"""Matrix: an application service through mautrix-python, each bot as its own user.

The names below are imported on first use (`lazy_names`), so reading this platform's
`cli.py` (`bcn-bridge --help`) does not load the Matrix library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bridge.core.registry import lazy_names

if TYPE_CHECKING:
    from adapters.matrix.adapter import MatrixAdapter
    from adapters.matrix.config import MatrixAccountConfig

__all__ = ["MatrixAccountConfig", "MatrixAdapter"]

__getattr__ = lazy_names(__name__, MatrixAdapter="adapter", MatrixAccountConfig="config")
