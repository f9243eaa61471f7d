"""The editor JSON Schema: valid Draft 2020-12, and it accepts what the loader accepts."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from bridge.config.editor_schema import editor_schema, with_secret_file_keys
from bridge.core import registry

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def validator(test_adapters: None) -> jsonschema.Validator:
    schema = editor_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(validator: jsonschema.Validator, document: object) -> list[str]:
    return [error.message for error in validator.iter_errors(document)]


@pytest.mark.parametrize("name", ["demo.yaml", "example.yaml"])
def test_shipped_configs_validate(validator: jsonschema.Validator, name: str) -> None:
    document = yaml.safe_load((REPO / "config" / name).read_text(encoding="utf-8"))
    assert _errors(validator, document) == []


def test_schema_covers_hub_and_every_importable_adapter(validator: jsonschema.Validator) -> None:
    schema = validator.schema
    assert "HubConfig" in schema["$defs"]
    accounts = schema["$defs"]["Accounts"]["properties"]
    assert {"telegram", "webchat", "testchat", "keepsfile"} <= set(accounts)


def test_schema_rejects_what_the_loader_rejects(validator: jsonschema.Validator) -> None:
    assert _errors(validator, {"bindings": [{"channel": "t:m", "chat": "c", "grop": "g"}]})
    assert _errors(validator, {"accounts": {"testchat": {"main": {"mode": "polling"}}}})
    assert _errors(validator, {"accounts": {"nochat": {"main": {}}}})
    assert _errors(validator, {"store": ["memory://"]})


def test_file_twins_are_accepted_and_exclusive(validator: jsonschema.Validator) -> None:
    account = {"accounts": {"testchat": {"main": {"token_file": "/run/secrets/t"}}}}
    assert _errors(validator, account) == []
    both = {"accounts": {"testchat": {"main": {"token": "x", "token_file": "/x"}}}}
    assert _errors(validator, both)
    assert _errors(validator, {"bcn": {"token": "x", "token_file": "/x"}})
    assert _errors(validator, {"bcn": {"token_file": "/x"}}) == []


def test_a_declared_file_key_is_not_doubled(validator: jsonschema.Validator) -> None:
    keeps = validator.schema["$defs"]["KeepsFileAccount"]
    assert set(keeps["properties"]) == {"token_file"}
    assert keeps["required"] == ["token_file"]


def test_unimportable_adapters_are_named_in_a_comment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.ADAPTERS, "pigeon", "adapters.pigeon_not_written:PigeonAdapter")
    schema = editor_schema()
    assert "pigeon (ModuleNotFoundError" in schema["$comment"]
    assert "pigeon" not in schema["$defs"]["Accounts"]["properties"]


def test_with_secret_file_keys_leaves_non_strings_alone() -> None:
    schema = {
        "type": "object",
        "properties": {"count": {"type": "integer"}, "name": {"type": "string"}},
        "required": ["count", "name"],
    }
    result = with_secret_file_keys(schema)
    assert set(result["properties"]) == {"count", "name", "name_file"}
    assert result["required"] == ["count"]
    assert schema["required"] == ["count", "name"]  # the input is not modified
