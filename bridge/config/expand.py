"""Fill in `${VAR}` references and `*_file` secrets before validation.

Secrets belong in the environment or in files mounted by the orchestrator, not in the
YAML that gets committed. Both are resolved here, in place, so every model sees final
values and needs no knowledge of where a value came from. Resolved values that are
secrets (under a secret key, from a secret file, or a URL with credentials) are marked
hidden on the document so no error message ever echoes them; other values are shown, so a
wrong chat id or address from the environment can be recognised and fixed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from bridge.config.document import Document
from bridge.config.errors import ConfigIssue, Loc
from bridge.config.messages import is_secret_key
from bridge.config.schema_nav import SchemaNavigator

_REFERENCE = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CREDENTIALS = re.compile(r"://[^/\s@]+@")
"""A URL with a user (and maybe a password) before its host."""
FILE_SUFFIX = "_file"
PLACEHOLDER = re.compile(r"change[-_ ]?me|replace[-_ ]with", re.IGNORECASE)
"""What the examples in deploy/ put where a secret goes (`change-me-…`, `replace-with-…`):
a value that still holds it was copied, not set, and is refused with its variable named."""


class _Unresolved(Exception):
    """An env reference that cannot be filled; the message is shown to the user."""

    def __init__(self, message: str, variable: str | None = None) -> None:
        super().__init__(message)
        self.variable = variable
        """The variable that is not set, when that is the problem."""


def expand_env(text: str, environ: Mapping[str, str]) -> str:
    """`${VAR}` and `${VAR:-default}` from `environ`; `$${` stays a literal `${`."""

    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "$${":
            return "${"
        body = match.group(1)
        if body is None:
            raise _Unresolved("unclosed '${' (write '$${' for a literal '${')")
        name, has_default, default = body.partition(":-")
        if not _VAR_NAME.fullmatch(name):
            raise _Unresolved(f"invalid environment reference '${{{body}}}'")
        value = environ.get(name)
        if has_default and not value:
            return default
        if value is None:
            raise _Unresolved(
                f"environment variable {name} is not set (use '${{{name}:-default}}' "
                "for a fallback)", variable=name,
            )
        if PLACEHOLDER.search(value):
            raise _Unresolved(
                f"environment variable {name} still holds the example's placeholder: set it "
                "to the real value (a link or bot token: a long random string, e.g. "
                "`openssl rand -hex 24`)"
            )
        return value

    return _REFERENCE.sub(replace, text)


def read_secret_file(path: Path) -> str:
    """The file's text without one trailing newline (what `echo secret > file` adds)."""
    text = path.read_text(encoding="utf-8")
    if text.endswith("\r\n"):
        return text[:-2]
    return text.removesuffix("\n")


def resolve_values(
    doc: Document,
    loc: Loc,
    navigator: SchemaNavigator,
    environ: Mapping[str, str] | None = None,
) -> list[ConfigIssue]:
    """Expand env references and `*_file` keys in the subtree at `loc`, in place.

    `loc` is where the subtree sits in the document; `navigator` describes the subtree
    itself, so a model that declares `token_file` as its own field keeps it untouched.
    """
    env = os.environ if environ is None else environ
    resolver = _Resolver(doc, loc, navigator, env)
    if not loc:
        doc.data = resolver.walk(doc.data, loc)
        return resolver.issues
    parent = _value_at(doc.data, loc[:-1])
    key = loc[-1]
    if isinstance(parent, dict) and key in parent:
        parent[key] = resolver.walk(parent[key], loc)
    elif isinstance(parent, list) and isinstance(key, int) and 0 <= key < len(parent):
        parent[key] = resolver.walk(parent[key], loc)
    return resolver.issues


def _value_at(data: Any, loc: Loc) -> Any:
    """The value at `loc`, or None when the path does not exist."""
    for part in loc:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data


class _Resolver:
    def __init__(
        self, doc: Document, base: Loc, navigator: SchemaNavigator, env: Mapping[str, str]
    ) -> None:
        self.doc = doc
        self.base = base
        self.navigator = navigator
        self.env = env
        self.issues: list[ConfigIssue] = []

    def walk(self, value: Any, loc: Loc) -> Any:
        if isinstance(value, str):
            return self._string(value, loc)
        if isinstance(value, list):
            return [self.walk(item, (*loc, i)) for i, item in enumerate(value)]
        if isinstance(value, dict):
            return self._mapping(value, loc)
        return value

    def _string(self, value: str, loc: Loc) -> str:
        if "${" not in value:
            return value
        try:
            expanded = expand_env(value, self.env)
        except _Unresolved as exc:
            issue = self.doc.issue(loc, str(exc))
            if exc.variable is not None:
                message = (self._unset_secret(exc.variable, loc) if self._is_secret(loc, "")
                           else str(exc))
                issue = replace(issue, message=message, unset_variable=exc.variable)
            self.issues.append(issue)
            return value
        if self._is_secret(loc, expanded):
            self.doc.hidden.add(loc)
        return expanded

    @staticmethod
    def _unset_secret(name: str, loc: Loc) -> str:
        """A secret has no sensible default: say how to give it."""
        key = loc[-1] if loc and isinstance(loc[-1], str) else None
        from_file = f", or keep it in a file and write '{key}{FILE_SUFFIX}: /path' instead" \
            if key is not None else ""
        return (f"environment variable {name} is not set: it holds a secret, so set it where "
                f"the bridge runs (export {name}=…){from_file}")

    def _is_secret(self, loc: Loc, value: str) -> bool:
        """Only secrets are kept out of error messages: a value under a secret key (by its
        name or the schema's mark) or one carrying credentials (`scheme://user:pw@host`).
        A chat id or an address from the environment is shown, so it can be fixed."""
        return (
            any(is_secret_key(part) for part in loc)
            or self.navigator.is_secret(loc[len(self.base):])
            or bool(_CREDENTIALS.search(value))
        )

    def _mapping(self, mapping: dict[Any, Any], loc: Loc) -> dict[Any, Any]:
        result = {key: self.walk(value, (*loc, key)) for key, value in mapping.items()}
        declared = self.navigator.keys_at(loc[len(self.base) :])
        for key in list(result):
            if not self._is_secret_file_key(key, result[key], declared):
                continue
            target = key.removesuffix(FILE_SUFFIX)
            if target in result:
                self.issues.append(
                    self.doc.issue((*loc, key), f"set either '{target}' or '{key}', not both")
                )
                continue
            secret = self._read(result[key], (*loc, key))
            del result[key]
            if secret is None:
                continue
            result[target] = secret
            target_loc = (*loc, target)
            self.doc.lines[target_loc] = self.doc.lines.get((*loc, key), self.doc.line_of(loc))
            self.doc.hidden.add(target_loc)
        return result

    @staticmethod
    def _is_secret_file_key(key: Any, value: Any, declared: set[str] | None) -> bool:
        if not isinstance(key, str) or not key.endswith(FILE_SUFFIX) or key == FILE_SUFFIX:
            return False
        if not isinstance(value, str):
            return False
        if declared is None:
            return True
        return key not in declared and key.removesuffix(FILE_SUFFIX) in declared

    def _read(self, raw_path: str, loc: Loc) -> str | None:
        path = Path(raw_path)
        try:
            try:
                path = path.expanduser()
            except RuntimeError:  # `~name` of no user this machine knows
                problem = f"{raw_path.split('/')[0]} names no user of this machine"
                self.issues.append(self.doc.issue(loc, f"cannot read secret file: {problem}"))
                return None
            if not path.is_absolute():
                path = Path(self.doc.file).parent / path
            secret = read_secret_file(path)
            if PLACEHOLDER.search(secret):
                self.issues.append(self.doc.issue(
                    loc, f"secret file {path} still holds the example's placeholder: put the "
                    "real secret in it"))
                return None
            return secret
        except ValueError:  # a NUL in the path: no file system can open it
            problem = "not a usable file path (it contains a NUL character)"
            self.issues.append(self.doc.issue(loc, f"cannot read secret file: {problem}"))
            return None
        except FileNotFoundError:
            problem = "file not found"
        except IsADirectoryError:
            problem = "is a directory, expected a file"
        except PermissionError:
            problem = "permission denied"
        except UnicodeDecodeError:
            problem = "not UTF-8 text"
        except OSError as exc:
            problem = exc.strerror or type(exc).__name__
        self.issues.append(self.doc.issue(loc, f"cannot read secret file {path}: {problem}"))
        return None
