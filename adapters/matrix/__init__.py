"""Matrix: an application service through mautrix-python (each bot as its own user)."""

from adapters.matrix.adapter import MatrixAdapter
from adapters.matrix.config import MatrixAccountConfig

__all__ = ["MatrixAccountConfig", "MatrixAdapter"]
