"""The YAML config: one file configures a whole deployment.

`load_section` and `ConfigError` come from modules that import no section model, so
section models (the hub's, the adapters') may use them freely. The whole-file schema
is imported on first use to keep `import bridge.config` free of cycles.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bridge.config.errors import ConfigError, ConfigIssue
from bridge.config.loader import load_section

if TYPE_CHECKING:
    from bridge.config.schema import BridgeConfig, load_config

__all__ = ["BridgeConfig", "ConfigError", "ConfigIssue", "load_config", "load_section"]


def __getattr__(name: str) -> Any:
    if name in ("BridgeConfig", "load_config"):
        from bridge.config import schema

        return getattr(schema, name)
    raise AttributeError(f"module 'bridge.config' has no attribute {name!r}")
