"""The JSON Schema of the whole config file, for editors (`bcn-bridge config schema`).

`BridgeConfig` types accounts loosely because adapters are found at run time; this
schema spells out every importable adapter's account model instead, and knows the
loader's `*_file` convention so an editor does not flag `token_file:` as unknown.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from bridge.config.expand import FILE_SUFFIX
from bridge.config.schema import BridgeConfig
from bridge.core import registry

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def importable_account_models() -> tuple[dict[str, type[BaseModel]], dict[str, str]]:
    """Account models of every registered adapter that imports; and why the others don't."""
    models: dict[str, type[BaseModel]] = {}
    missing: dict[str, str] = {}
    for channel_type in sorted(registry.ADAPTERS):
        try:
            models[channel_type] = registry.account_config_model(channel_type)
        except Exception as exc:  # an adapter that is absent or broken is left out
            missing[channel_type] = f"{type(exc).__name__}: {exc}"
    return models, missing


def editor_schema() -> dict[str, Any]:
    """A draft 2020-12 JSON Schema describing a config file as it is written."""
    models, missing = importable_account_models()
    account_fields: dict[str, Any] = {
        channel_type: (
            dict[str, model | None] | None,
            Field(None, description=f"{channel_type} accounts by name, e.g. 'main'."),
        )
        for channel_type, model in models.items()
    }
    accounts_model = create_model(  # type: ignore[call-overload]
        "Accounts", __config__=ConfigDict(extra="forbid"), **account_fields
    )
    file_model = create_model(
        "BridgeConfigFile",
        __base__=BridgeConfig,
        __doc__="A bcn-bridge config file.",
        accounts=(accounts_model | None, None),
    )
    schema = with_secret_file_keys(file_model.model_json_schema())
    schema = {"$schema": JSON_SCHEMA_DIALECT, **schema}
    if missing:
        schema["$comment"] = "Adapters left out (not importable): " + "; ".join(
            f"{kind} ({reason})" for kind, reason in missing.items()
        )
    return schema


def with_secret_file_keys(schema: dict[str, Any]) -> dict[str, Any]:
    """Add `<key>_file` beside every string key of a closed object, as the loader allows.

    A required key becomes "this key or its `_file` twin", so `token_file:` alone is valid.
    """
    result = copy.deepcopy(schema)
    for node in _objects(result):
        properties: dict[str, Any] = node["properties"]
        for key, prop in list(properties.items()):
            twin = key + FILE_SUFFIX
            if twin in properties or key.endswith(FILE_SUFFIX) or not _accepts_string(prop):
                continue
            properties[twin] = {
                "type": "string",
                "description": f"Read '{key}' from this file (one trailing newline removed).",
            }
            required: list[str] = node.get("required", [])
            if key in required:
                required.remove(key)
                node.setdefault("allOf", []).append(
                    {"oneOf": [{"required": [key]}, {"required": [twin]}]}
                )
            else:
                node.setdefault("allOf", []).append({"not": {"required": [key, twin]}})
        if "required" in node and not node["required"]:
            del node["required"]
    return result


def _objects(node: Any) -> list[dict[str, Any]]:
    """Every schema object with `properties`, anywhere in the tree."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if isinstance(node.get("properties"), dict):
            found.append(node)
        for value in node.values():
            found.extend(_objects(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_objects(value))
    return found


def _accepts_string(prop: Any) -> bool:
    if not isinstance(prop, dict):
        return False
    kind = prop.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    return any(_accepts_string(option) for option in prop.get("anyOf", []))
