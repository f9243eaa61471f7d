"""A CLARIFY's choices: the `Options: A | B | C` field, read and written.

The field is not one the reference library knows, so the parser keeps it in
`ProtocolMessage.meta` like any unknown field and older parsers are unaffected. The
writer (`format_options`) refuses any choice that would not read back as itself; the
reader (`options_of`) never raises and only ever returns choices the writer accepts, so
`options_of(parse(build_clarify(..., options=choices)))` is exactly the trimmed choices.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from bridge.protocol.syntax import FENCE, JS_WHITESPACE

if TYPE_CHECKING:
    from bridge.protocol.model import ProtocolMessage

OPTIONS_KEY = "Options"
"""The field's name as the builders write it (read in any case, like every key)."""
MAX_OPTIONS = 10
MAX_OPTION_LENGTH = 80
"""Characters in one choice: Discord's limit for a button label."""
SEPARATOR = " | "

# Every character Python's str.splitlines() breaks at: one is never part of a choice.
_LINE_BREAK_CHARACTERS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_LINE_BREAK = re.compile(f"[{_LINE_BREAK_CHARACTERS}]")
_CHOICE_SEPARATOR = re.compile(f"[|{_LINE_BREAK_CHARACTERS}]")


def options_of(message: ProtocolMessage) -> tuple[str, ...]:
    """The choices a CLARIFY offers, in order; `()` when it offers none. Never raises.

    Lenient in: the `Options` value is split at `|` (and at line breaks, so a list
    continued on the next line still reads), each piece trimmed; empty pieces, a piece
    `format_options` would refuse (longer than `MAX_OPTION_LENGTH`, or holding ```) and a
    repeated piece are skipped, and the first `MAX_OPTIONS` are kept. Any message type
    other than CLARIFY offers no choices.
    """
    if message.type != "CLARIFY" or not message.meta:
        return ()
    return options_in(message.meta)


def options_in(meta: Mapping[str, str]) -> tuple[str, ...]:
    """The choices an `Options` field in `meta` offers, read as `options_of` reads them
    (for a CLARIFY already turned into a record, e.g. `ProtocolMessage.to_dict()`)."""
    value = _options_value(meta)
    if not value:
        return ()
    choices: list[str] = []
    for piece in _CHOICE_SEPARATOR.split(value):
        choice = piece.strip(JS_WHITESPACE)
        if choice and _problem(choice) is None and choice not in choices:
            choices.append(choice)
            if len(choices) == MAX_OPTIONS:
                break
    return tuple(choices)


def format_options(choices: Iterable[str]) -> str:
    """The `Options` value for `choices` (`"A | B | C"`); `""` for no choices.

    Each choice is trimmed; a choice that is not text, is blank, holds a line break, `|`
    or ```, or is longer than `MAX_OPTION_LENGTH` characters, more than `MAX_OPTIONS`
    choices, or one choice given twice raises `ValueError` naming it.
    """
    if isinstance(choices, str | bytes):
        raise ValueError("options must be a list of choices, not one string")
    try:
        given = list(choices)
    except TypeError:
        raise ValueError(
            f"options must be a list of choices, got {type(choices).__name__}"
        ) from None
    if len(given) > MAX_OPTIONS:
        raise ValueError(f"at most {MAX_OPTIONS} options, got {len(given)}")
    written: list[str] = []
    for number, choice in enumerate(given, start=1):
        if not isinstance(choice, str):
            raise ValueError(f"option {number} must be text, got {type(choice).__name__}")
        trimmed = choice.strip(JS_WHITESPACE)
        problem = _problem(trimmed)
        if problem is not None:
            raise ValueError(f"option {number} ({_shown(choice)}) {problem}")
        if trimmed in written:
            raise ValueError(f"option {number} ({_shown(choice)}) is given twice")
        written.append(trimmed)
    return SEPARATOR.join(written)


def _options_value(meta: Mapping[str, str]) -> str | None:
    """The `Options` value, its key read in any case (like every key; the last spelling
    in `meta` wins, as a later duplicate key does)."""
    value = None
    for key, candidate in meta.items():
        if key.lower() == "options":
            value = candidate
    return value


def _problem(choice: str) -> str | None:
    """Why a trimmed choice cannot be written, or None when it can."""
    if not choice:
        return "is blank"
    if _LINE_BREAK.search(choice):
        return "must be one line"
    if "|" in choice:
        return "must not contain | (it separates the options)"
    if FENCE in choice:
        return "must not contain ``` (it would close the protocol block)"
    if len(choice) > MAX_OPTION_LENGTH:
        return (
            f"is {len(choice)} characters long; at most {MAX_OPTION_LENGTH} "
            "(a button label)"
        )
    return None


def _shown(choice: str) -> str:
    """A choice as an error message quotes it: repr, cut after 40 characters."""
    return repr(choice) if len(choice) <= 40 else repr(choice[:40]) + "…"
