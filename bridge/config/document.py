"""Read a YAML file into plain data plus the line of every key and list item.

PyYAML's `safe_load` throws line numbers away; the config errors need them. So the file
is composed into nodes and converted by hand, recording `loc -> line` on the way. Duplicate
keys, which `safe_load` silently resolves to the last one, are reported instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bridge.config.errors import ConfigError, ConfigIssue, Loc


@dataclass
class Document:
    """Parsed YAML data with the source position of every key and item."""

    file: str
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)
    hidden: set[Loc] = field(default_factory=set)
    """Values that must never be echoed back (came from the environment or a secret file)."""

    def line_of(self, loc: Loc) -> int | None:
        """The line of `loc`, or of its nearest ancestor that exists in the file."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(tuple(loc[:end]))
            if line is not None:
                return line
        return None

    def issue(self, loc: Loc, message: str) -> ConfigIssue:
        return ConfigIssue(file=self.file, line=self.line_of(loc), loc=tuple(loc), message=message)


_TOO_DEEP = "the YAML is nested too deeply to be a config file"


def read_document(path: str | Path) -> Document:
    """Load `path`; a missing file, unreadable file or YAML syntax error is a `ConfigError`."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError.single(file, "config file not found") from None
    except IsADirectoryError:
        raise ConfigError.single(file, "expected a config file, got a directory") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ConfigError.single(file, f"cannot read config file: {reason}") from None
    return parse_document(text, file)


def parse_document(text: str, file: str = "<config>") -> Document:
    """Parse YAML text; `file` is the name used in error messages."""
    try:
        loader = yaml.SafeLoader(text)
    except yaml.reader.ReaderError as exc:  # a control character: PyYAML refuses the text
        line = text.count("\n", 0, exc.position) + 1
        problem = f"character #x{exc.character:04x} is not allowed in YAML"
        raise ConfigError.single(file, problem, line=line) from None
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(file, exc) from None
    except yaml.YAMLError as exc:
        raise ConfigError.single(file, f"invalid YAML: {exc}") from None
    except RecursionError:
        raise ConfigError.single(file, _TOO_DEEP) from None
    finally:
        loader.dispose()
    doc = Document(file=file, data=None, lines={(): 1})
    if root is None:
        doc.data = {}
        return doc
    issues: list[ConfigIssue] = []
    try:
        doc.data = _NodeReader(loader, doc, issues).read(root, ())
    except RecursionError:
        raise ConfigError.single(file, _TOO_DEEP) from None
    if issues:
        raise ConfigError(issues)
    return doc


_PLAIN_WORDS: tuple[tuple[str, str], ...] = (
    ("found character '\\t'", "a tab: YAML indents with spaces only"),
    ("mapping values are not allowed",
     "a ':' where no new key can start: is this line indented too far, or does a value "
     "hold ': '? (then quote it)"),
    ("could not find expected ':'",
     "a line that is neither 'key: value' nor '- item': is a ':' missing, or a long value "
     "not quoted?"),
    ("found unexpected end of stream", "the file ends inside a quoted value: a quote is "
     "not closed"),
    ("expected <block end>, but found", "the indentation does not match the lines above: "
     "line keys and list items up under the one they belong to"),
    ("did not find expected key", "the indentation does not match the lines above: line "
     "keys up under the one they belong to"),
    ("did not find expected '-' indicator", "a list item without '- ', or indented like one"),
    ("expected ',' or ']'", "a [list] that is not closed, or an item with ':' in it (quote it)"),
    ("expected ',' or '}'", "a {mapping} that is not closed, or a value with ':' (quote it)"),
    ("found undefined alias", "an *alias with no &anchor of that name above it"),
    ("found unknown escape character", "a backslash escape YAML does not know inside "
     "\"double quotes\" (use 'single quotes' for Windows paths)"),
    ("while scanning a simple key", "a key that runs over the end of the line: is a ':' "
     "missing?"),
)
"""PyYAML's wording → what to look for, in plain words; the original follows in brackets."""


def _syntax_error(file: str, exc: yaml.MarkedYAMLError) -> ConfigError:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark is not None else None
    column = mark.column + 1 if mark is not None else None
    problem = exc.problem or exc.context or "invalid YAML"
    if exc.context and exc.problem:
        problem = f"{exc.problem} ({exc.context})"
    said = " ".join(filter(None, [exc.problem, exc.context]))
    plain = next((words for pattern, words in _PLAIN_WORDS if pattern in said), None)
    if plain is not None:
        opened = exc.context_mark
        spans = exc.context is not None and ("quoted" in exc.context or "flow" in exc.context)
        if spans and opened is not None and mark is not None and opened.line != mark.line:
            plain += f" (opened on line {opened.line + 1})"
        problem = f"{plain} [{problem}]"
    return ConfigError.single(file, f"YAML syntax error: {problem}", line=line, column=column)


class _NodeReader:
    """Turns composed nodes into dicts, lists and scalars while filling `doc.lines`."""

    def __init__(self, loader: yaml.SafeLoader, doc: Document, issues: list[ConfigIssue]):
        self._loader = loader
        self._doc = doc
        self._issues = issues
        self._open: set[int] = set()

    def read(self, node: yaml.Node, loc: Loc) -> Any:
        if id(node) in self._open:
            self._issues.append(self._doc.issue(loc, "recursive YAML alias is not supported"))
            return None
        if not isinstance(node, yaml.MappingNode | yaml.SequenceNode):
            return self._scalar(node, loc)
        self._open.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, loc)
            return self._sequence(node, loc)
        finally:
            self._open.discard(id(node))

    def _mapping(self, node: yaml.MappingNode, loc: Loc) -> dict[Any, Any]:
        try:
            self._loader.flatten_mapping(node)  # resolve `<<: *anchor` merge keys
        except yaml.MarkedYAMLError as exc:
            self._issues.append(self._doc.issue(loc, f"invalid merge key: {exc.problem}"))
            return {}
        result: dict[Any, Any] = {}
        first_line: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = self._scalar(key_node, loc) if isinstance(key_node, yaml.ScalarNode) else None
            line = key_node.start_mark.line + 1
            if not isinstance(key, str | int | float | bool) or key is None:
                self._issues.append(
                    ConfigIssue(self._doc.file, line, loc, "expected a plain key (a name)")
                )
                continue
            key = str(key) if not isinstance(key, str) else key
            if key in result:
                self._issues.append(
                    ConfigIssue(
                        self._doc.file,
                        line,
                        (*loc, key),
                        f"duplicate key (first set on line {first_line[key]})",
                    )
                )
                continue
            first_line[key] = line
            self._doc.lines[(*loc, key)] = line
            result[key] = self.read(value_node, (*loc, key))
        return result

    def _sequence(self, node: yaml.SequenceNode, loc: Loc) -> list[Any]:
        items = []
        for index, item in enumerate(node.value):
            self._doc.lines[(*loc, index)] = item.start_mark.line + 1
            items.append(self.read(item, (*loc, index)))
        return items

    def _scalar(self, node: yaml.Node, loc: Loc) -> Any:
        try:
            return self._loader.construct_object(node, deep=True)
        except yaml.MarkedYAMLError as exc:
            line = node.start_mark.line + 1
            self._issues.append(ConfigIssue(self._doc.file, line, loc, f"{exc.problem}"))
            return None
