"""Walk a model's JSON Schema along a YAML path.

The loader needs to know, at any place in the data, which keys the model accepts (for
"did you mean" hints and the `*_file` convention) and whether a value is a secret. The
JSON Schema pydantic generates answers both for any model, nested or generic, without
the loader importing or special-casing the model classes.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

Schema = dict[str, Any]


class SchemaNavigator:
    """Answers questions about the schema node that describes a given data path."""

    def __init__(self, root: Schema | None) -> None:
        self._root = root or {}
        self._defs: dict[str, Schema] = self._root.get("$defs", {})

    @classmethod
    def for_model(cls, model_cls: type[BaseModel]) -> SchemaNavigator:
        """A navigator for `model_cls`; one that knows nothing if no schema can be built."""
        try:
            return cls(model_cls.model_json_schema())
        except Exception:  # a model with types JSON Schema cannot express
            return cls(None)

    def nodes_at(self, loc: tuple[str | int, ...]) -> list[Schema]:
        """Every schema alternative that may describe the value at `loc` (unions fan out)."""
        current = self._expand(self._root)
        for part in loc:
            nxt: list[Schema] = []
            for node in current:
                nxt.extend(self._expand(self._child(node, part)))
            current = nxt
            if not current:
                break
        return current

    def keys_at(self, loc: tuple[str | int, ...]) -> set[str] | None:
        """Keys a mapping at `loc` may have; None when the schema does not say."""
        keys: set[str] = set()
        for node in self.nodes_at(loc):
            if "properties" in node:
                keys.update(node["properties"])
            elif node.get("type") == "object" or "additionalProperties" in node:
                if node.get("additionalProperties", True) is not False:
                    return None
        return keys or None

    def is_secret(self, loc: tuple[str | int, ...]) -> bool:
        """Does the schema mark the value at `loc` as a password (pydantic `SecretStr`)?"""
        return any(
            node.get("format") == "password" or node.get("writeOnly") is True
            for node in self.nodes_at(loc)
        )

    def _child(self, node: Schema, part: str | int) -> Schema | None:
        if isinstance(part, int):
            items = node.get("items")
            if isinstance(items, dict):
                return items
            prefix = node.get("prefixItems")
            if isinstance(prefix, list) and part < len(prefix):
                return prefix[part]
            return None
        properties = node.get("properties", {})
        if part in properties:
            return properties[part]
        extra = node.get("additionalProperties")
        return extra if isinstance(extra, dict) else None

    def _expand(self, node: Schema | None) -> list[Schema]:
        """Resolve `$ref` and flatten `anyOf`/`oneOf`/`allOf` into concrete alternatives."""
        if not isinstance(node, dict):
            return []
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = self._defs.get(ref.removeprefix("#/$defs/"))
            resolved = [*self._expand(target)]
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return [*resolved, rest] if rest else resolved
        if ref == "#":
            return self._expand(self._root)
        result: list[Schema] = [node]
        for combinator in ("anyOf", "oneOf", "allOf"):
            for option in node.get(combinator, []):
                result.extend(self._expand(option))
        return result
