"""Config errors that point at the exact place in the YAML file.

A deployment is usually fixed by someone reading one error line, so every problem
carries the file, the line, the key path and what was expected, and all problems in a
file are reported together instead of one per run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Loc = tuple[str | int, ...]
"""A path into the YAML data: mapping keys and list indexes, outermost first."""


def format_loc(loc: Sequence[str | int]) -> str:
    """`("bindings", 0, "group")` -> `bindings[0].group`, the form people search for."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif text:
            text += f".{part}"
        else:
            text = str(part)
    return text or "(top level)"


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """One problem: where it is and what was expected there."""

    file: str
    line: int | None
    loc: Loc
    message: str
    column: int | None = None
    """Where on the line, when known (YAML syntax errors): `file:line:column:`."""
    unset_variable: str | None = None
    """The environment variable this value needs and that is not set (`${NAME}`), so a file
    check can tell "set NAME where it runs" from a mistake in the file."""

    @property
    def path(self) -> str:
        return format_loc(self.loc)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        if self.line is not None and self.column is not None:
            where += f":{self.column}"
        if not self.loc:
            return f"{where}: {self.message}"
        return f"{where}: {self.path}: {self.message}"


class ConfigError(ValueError):
    """The config file cannot be used; `issues` lists every problem found, in file order."""

    def __init__(self, issues: Iterable[ConfigIssue]) -> None:
        ordered = sorted(issues, key=lambda i: (i.file, i.line or 0, i.path))
        if not ordered:
            raise ValueError("ConfigError needs at least one issue")
        self.issues: tuple[ConfigIssue, ...] = tuple(ordered)
        super().__init__(self._render())

    @classmethod
    def single(
        cls, file: str, message: str, *, line: int | None = None, loc: Loc = (),
        column: int | None = None,
    ) -> ConfigError:
        return cls([ConfigIssue(file=file, line=line, loc=loc, message=message, column=column)])

    def _render(self) -> str:
        lines = [str(issue) for issue in self.issues]
        if len(lines) == 1:
            return lines[0]
        return f"{len(lines)} problems in the config:\n" + "\n".join(f"  {x}" for x in lines)
