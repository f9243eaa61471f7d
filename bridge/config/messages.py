"""Turn pydantic's validation errors into sentences a deployer can act on.

Pydantic says "Input should be a valid string"; a person editing YAML needs "expected a
string, got a list" at `bindings[0].group`, a hint when a key is misspelt, and never the
value of a secret echoed back into a terminal or a log.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterable
from typing import Any

from pydantic_core import ErrorDetails

_KINDS: dict[str, str] = {
    "string_type": "a string",
    "string_sub_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "decimal_type": "a number",
    "decimal_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "tuple_type": "a list",
    "set_type": "a list",
    "dict_type": "a mapping (key: value)",
    "model_type": "a mapping (key: value)",
    "model_attributes_type": "a mapping (key: value)",
    "dataclass_type": "a mapping (key: value)",
    "typed_dict_type": "a mapping (key: value)",
    "none_required": "nothing (null)",
    "url_type": "a URL string",
}

_SECRET_WORDS = frozenset(
    {
        "token", "tokens", "secret", "secrets", "password", "passwords", "passwd", "key",
        "keys", "apikey", "credential", "credentials", "auth", "signing", "private",
    }
)  # fmt: skip


def is_secret_key(key: str | int) -> bool:
    """Names like `token`, `link_tokens`, `signing_secret`, `api_key` hold secrets."""
    if not isinstance(key, str):
        return False
    return any(part in _SECRET_WORDS for part in re.split(r"[_\-.\s]+", key.lower()))


def hide_values(message: str, secrets: Iterable[str]) -> str:
    """`message` with each secret, or a shortened secret ending in a quote or "...", as `***`.

    For validators that quote what they refuse (`f"{value!r} is not a URL"`): a value that
    came from the environment, a secret file or a secret key must not be echoed that way.
    """
    for secret in sorted(set(secrets), key=len, reverse=True):
        if not secret:
            continue
        forms = {secret, repr(secret)[1:-1]}
        for form in forms:
            if len(form) >= 4:
                message = message.replace(form, "***")
            else:
                for quote in "'\"":
                    message = message.replace(f"{quote}{form}{quote}", f"{quote}***{quote}")
        for length in range(len(secret) - 1, 7, -1):
            cut = re.escape(secret[:length]) + r"(?=['\"]|\.\.\.|…)"
            message = re.sub(cut, "***", message)
    return message


def did_you_mean(word: str, options: Collection[str]) -> str:
    """`"; did you mean 'group'?"` when an option is close to `word`, else ``."""
    close = difflib.get_close_matches(word, sorted(options), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def unknown_key_message(key: str | int, allowed: Collection[str] | None) -> str:
    message = f"unknown key '{key}'"
    if not allowed:
        return message
    hint = did_you_mean(str(key), allowed)
    if hint:
        return message + hint
    if len(allowed) <= 15:
        return message + "; expected one of: " + ", ".join(sorted(allowed))
    return message


def describe_value(value: Any, *, hidden: bool) -> str:
    """What the user wrote, in words; secret values are described by type only."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "a number" if hidden else f"the number {value}"
    if isinstance(value, str):
        if hidden:
            return "a string (value hidden)"
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}" if value else "an empty string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def expectation(error: ErrorDetails) -> str:
    """The "expected ..." half of a message, from pydantic's error type and context."""
    kind = _KINDS.get(error["type"])
    if kind is not None:
        return f"expected {kind}"
    ctx = error.get("ctx") or {}
    if error["type"] in ("literal_error", "enum") and "expected" in ctx:
        return f"expected {ctx['expected']}"
    if error["type"] == "string_pattern_mismatch" and "pattern" in ctx:
        return f"expected a string matching {ctx['pattern']!r}"
    msg = error["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            return msg.removeprefix(prefix)
    if msg.startswith("Input should be "):
        return "expected " + msg.removeprefix("Input should be ")
    if msg.startswith(("String should have ", "List should have ", "Dictionary should have ")):
        return "expected " + msg.split(" should have ", 1)[1]
    return msg[:1].lower() + msg[1:]


def error_message(error: ErrorDetails, *, hidden: bool, allowed: Collection[str] | None) -> str:
    """The whole sentence for one pydantic error at an already-known location."""
    kind = error["type"]
    if kind == "missing":
        return "required key is missing"
    if kind == "extra_forbidden":
        return unknown_key_message(error["loc"][-1] if error["loc"] else "?", allowed)
    expected = expectation(error)
    if kind in ("value_error", "assertion_error"):
        return expected
    got = describe_value(error.get("input"), hidden=hidden)
    message = f"{expected}, got {got}"
    if kind == "string_type" and isinstance(error.get("input"), int | float) and not hidden:
        value = error["input"]
        if not isinstance(value, bool):
            message += f' (quote it: "{value}")'
    return message
