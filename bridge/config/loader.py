"""Validate parts of a YAML config file against pydantic models, with precise errors.

This module knows no concrete model, so any section model (the hub's, an adapter's
account config, the whole bridge file) can be validated through it without import
cycles. `load_section` is the entry point for commands that need one section only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from bridge.config.document import Document, read_document
from bridge.config.errors import ConfigError, ConfigIssue, Loc
from bridge.config.expand import FILE_SUFFIX, resolve_values
from bridge.config.messages import error_message, hide_values, is_secret_key
from bridge.config.schema_nav import SchemaNavigator
from bridge.text.unicode import valid_unicode_in

ModelT = TypeVar("ModelT", bound=BaseModel)


def load_section(
    path: str | Path,
    section: str,
    model_cls: type[ModelT],
    *,
    environ: Mapping[str, str] | None = None,
) -> ModelT:
    """Validate the top-level `section` of the file at `path` as `model_cls`.

    Raises `ConfigError` (file, line, key path, expectation) for anything wrong,
    including a missing file, a YAML syntax error or a missing section.
    """
    doc = read_document(path)
    top = top_level(doc)
    if section not in top:
        raise ConfigError.single(doc.file, f"missing section '{section}:'", line=1)
    if top[section] is None:
        top[section] = {}  # `hub:` with nothing under it means all defaults
    model, issues = validate_at(doc, (section,), model_cls, environ=environ)
    if issues or model is None:
        raise ConfigError(issues)
    return model


def top_level(doc: Document) -> dict[str, Any]:
    """The document's top-level mapping; anything else is a `ConfigError`."""
    if not isinstance(doc.data, dict):
        raise ConfigError.single(
            doc.file, "expected a mapping of sections at the top level (e.g. 'bcn:')", line=1
        )
    return doc.data


def value_at(data: Any, loc: Loc) -> Any:
    for part in loc:
        data = data[part]
    return data


def validate_at(
    doc: Document,
    loc: Loc,
    model_cls: type[ModelT],
    *,
    environ: Mapping[str, str] | None = None,
) -> tuple[ModelT | None, list[ConfigIssue]]:
    """Resolve env/secret-file values under `loc`, then validate them as `model_cls`.

    Returns the model (None when invalid) and every problem found, so a caller that
    validates several sections can report them all at once.

    Every config value becomes a model here, whether it came from the YAML (a double-quoted
    `"\\ud800"` is a lone surrogate), the environment (undecodable bytes arrive as lone
    surrogates) or a secret file: so this is the config's one door to valid Unicode
    (docs/text.md, "Valid Unicode"), and a lone surrogate is U+FFFD in every model.
    """
    navigator = SchemaNavigator.for_model(model_cls)
    resolve_issues = resolve_values(doc, loc, navigator, environ)
    try:
        model = model_cls.model_validate(valid_unicode_in(value_at(doc.data, loc)))
    except ValidationError as exc:
        issues = translate_errors(exc, doc, loc, navigator)
        return None, _without_repeats(resolve_issues, issues)
    if resolve_issues:
        return None, resolve_issues
    return model, []


def translate_errors(
    exc: ValidationError, doc: Document, base: Loc, navigator: SchemaNavigator
) -> list[ConfigIssue]:
    """One `ConfigIssue` per distinct problem, located in the file."""
    section_data = value_at(doc.data, base)
    by_loc: dict[Loc, list[str]] = {}
    for error in exc.errors(include_url=False):
        rel = data_loc(section_data, error["loc"])
        full = (*base, *rel)
        hidden = (
            full in doc.hidden or any(is_secret_key(p) for p in full) or navigator.is_secret(rel)
        )
        allowed = navigator.keys_at(rel[:-1]) if error["type"] == "extra_forbidden" else None
        message = error_message(error, hidden=hidden, allowed=allowed)
        secrets = _secrets_under(doc, full, rel, navigator)
        if hidden and isinstance(error.get("input"), str):
            secrets.append(error["input"])
        message = hide_values(message, secrets)
        messages = by_loc.setdefault(full, [])
        if message not in messages:
            messages.append(message)
    return [doc.issue(loc, _merge(messages)) for loc, messages in by_loc.items()]


def issue_hiding_secrets(doc: Document, loc: Loc, message: str) -> ConfigIssue:
    """`doc.issue`, for a message that may quote values found at or below `loc`."""
    secrets = _secrets_under(doc, loc, (), SchemaNavigator(None))
    return doc.issue(loc, hide_values(message, secrets))


def _secrets_under(doc: Document, full: Loc, rel: Loc, navigator: SchemaNavigator) -> list[str]:
    """Every string at or below `full` that must not be echoed (hidden, or a secret's)."""
    found: list[str] = []

    def walk(value: Any, loc: Loc, sub: Loc) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, (*loc, key), (*sub, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, (*loc, index), (*sub, index))
        elif isinstance(value, str) and (
            loc in doc.hidden or any(is_secret_key(p) for p in loc) or navigator.is_secret(sub)
        ):
            found.append(value)

    try:
        start = value_at(doc.data, full)
    except (KeyError, IndexError, TypeError):
        return found
    walk(start, full, rel)
    return found


def data_loc(data: Any, loc: tuple[int | str, ...]) -> Loc:
    """Pydantic's `loc` minus the union/validator tags that are not keys in the data."""
    path: list[str | int] = []
    for index, part in enumerate(loc):
        if isinstance(data, dict) and part in data:
            data = data[part]
            path.append(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
            path.append(part)
        elif index == len(loc) - 1:
            path.append(part)  # a missing or unknown key: it names the place
        # else: a tag such as 'function-after[...]' or a union member name
    return tuple(path)


def _merge(messages: list[str]) -> str:
    """Union members each complain; "expected A, got X" + "expected B, got X" reads as one."""
    if len(messages) == 1:
        return messages[0]
    halves = [m.rpartition(", got ") for m in messages]
    if all(sep for _, sep, _ in halves) and len({got for _, _, got in halves}) == 1:
        expected = [e.removeprefix("expected ") for e, _, _ in halves]
        return f"expected {' or '.join(expected)}, got {halves[0][2]}"
    return "; ".join(messages)


def _without_repeats(first: list[ConfigIssue], then: list[ConfigIssue]) -> list[ConfigIssue]:
    """Drop validation errors that only echo a failed env/secret-file resolution."""
    failed: set[Loc] = set()
    for issue in first:
        failed.add(issue.loc)
        last = issue.loc[-1] if issue.loc else None
        if isinstance(last, str) and last.endswith(FILE_SUFFIX):
            failed.add((*issue.loc[:-1], last.removesuffix(FILE_SUFFIX)))
    return first + [issue for issue in then if issue.loc not in failed]
