"""Builders: canonical protocol text, byte-identical to the reference library's output.

Bots outside BCN read what we post with the reference parser, so the layout (field
order, fences, `→ @Name`, default depth 1/5) is copied exactly. Where the reference would
emit text that no parser reads back the way it was meant — a value containing ```, a
line inside a value that looks like `Key: value`, a blank required field, an unknown
status — these builders raise `ValueError` instead, so `parse(build_*(...))` always
returns what was built. `escape_value` makes arbitrary text safe to pass in.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from typing import Any

from bridge.protocol.depth import (
    DEFAULT_DEPTH,
    MAX_DEPTH_CAP,
    Depth,
    check_depth,
    coerce_depth,
)
from bridge.protocol.model import PRIORITIES, STATUSES
from bridge.protocol.names import encode_name
from bridge.protocol.options import OPTIONS_KEY, format_options
from bridge.protocol.syntax import FENCE, JS_WHITESPACE, is_field_line

_ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_ID_LENGTH = 6
_NOT_ID_CHARACTER = re.compile(r"[^a-z0-9]")
_LINE_BREAK = re.compile("[\r\u2028\u2029]")
_NEEDS_A_CLOSER_LOOK = re.compile("[\n\r\u2028\u2029`]")
_LINE_SEPARATORS = re.compile(r"\r\n?|[\u2028\u2029]")

Field = tuple[str, str | None]


def generate_request_id(name: str) -> str:
    """`<name>-xxxxxx`: the sender's lowercased letters and digits, six random [0-9a-z]."""
    number = secrets.randbelow(len(_ID_ALPHABET) ** _ID_LENGTH)
    suffix = []
    for _ in range(_ID_LENGTH):
        number, digit = divmod(number, len(_ID_ALPHABET))
        suffix.append(_ID_ALPHABET[digit])
    return f"{_NOT_ID_CHARACTER.sub('', name.lower())}-{''.join(suffix)}"


def escape_value(text: str) -> str:
    """Make free text (say, a bot's whole reply) safe to use as a field value.

    Line separators become LF, ``` becomes ''' (it would close the block), and a line
    that would read as a new `Key:` field is indented by one space. The text changes
    visibly but minimally, and any parser reads it back as one value.
    """
    lines = _LINE_SEPARATORS.sub("\n", text).replace(FENCE, "'''").split("\n")
    return "\n".join(
        [lines[0]] + [" " + line if is_field_line(line) else line for line in lines[1:]]
    )


def build_request(
    *,
    to: str | None = None,
    from_: str | None = None,
    task: str | None = None,
    request_id: str | None = None,
    context: str | None = None,
    depth: Depth | tuple[int, int] | None = None,
    callback: str | None = None,
    priority: str | None = None,
    original_from: str | None = None,
    max_depth_cap: int = MAX_DEPTH_CAP,
) -> str:
    """Ask `to` to do `task`; a request id is generated from `from_` when none is given."""
    _require("REQUEST", (("to", to), ("from", from_), ("task", task)))
    return _render_task(
        "REQUEST", to, from_, original_from, _request_id("REQUEST", request_id, from_), task,
        context, _checked_depth(depth, "REQUEST", max_depth_cap), callback, priority,
    )


def build_response(
    *,
    to: str | None = None,
    from_: str | None = None,
    request_id: str | None = None,
    status: str | None = None,
    result: str | None = None,
    context: str | None = None,
    depth: Depth | tuple[int, int] | None = None,
    original_from: str | None = None,
    max_depth_cap: int = MAX_DEPTH_CAP,
) -> str:
    """Answer request `request_id`; allowed at any depth up to the limit itself."""
    _require("RESPONSE", (("to", to), ("from", from_), ("requestId", request_id)))
    if _blank(status) and _blank(result):
        raise ValueError("RESPONSE requires either status or result")
    if status and (not isinstance(status, str) or status not in STATUSES):
        raise ValueError(f"status must be one of done, partial, failed (got {status!r})")
    checked = _checked_depth(depth, "RESPONSE", max_depth_cap)
    return _render(
        "RESPONSE",
        to,
        [
            ("From", from_),
            ("OriginalFrom", original_from),
            ("RequestId", request_id),
            ("Status", status),
            ("Result", result),
            ("Context", context),
            ("Depth", str(checked)),
        ],
    )


def build_clarify(
    *,
    to: str | None = None,
    from_: str | None = None,
    request_id: str | None = None,
    question: str | None = None,
    depth: Depth | tuple[int, int] | None = None,
    max_depth_cap: int = MAX_DEPTH_CAP,
    options: Iterable[str] | None = None,
) -> str:
    """Ask the requester `question` about request `request_id` before answering it.

    `options` (at most 10 short one-line choices) adds `Options: A | B | C` after the
    question, for the bridge to show as buttons; see `bridge.protocol.options`.
    """
    _require(
        "CLARIFY", (("to", to), ("from", from_), ("requestId", request_id), ("question", question))
    )
    checked = _checked_depth(depth, "CLARIFY", max_depth_cap)
    return _render(
        "CLARIFY",
        to,
        [
            ("From", from_),
            ("RequestId", request_id),
            ("Question", question),
            (OPTIONS_KEY, None if options is None else format_options(options)),
            ("Depth", str(checked)),
        ],
    )


def build_handoff(
    *,
    to: str | None = None,
    from_: str | None = None,
    request_id: str | None = None,
    task: str | None = None,
    context: str | None = None,
    depth: Depth | tuple[int, int] | None = None,
    callback: str | None = None,
    priority: str | None = None,
    original_from: str | None = None,
    max_depth_cap: int = MAX_DEPTH_CAP,
) -> str:
    """Pass request `request_id` on to `to`; `original_from` names who first asked."""
    _require("HANDOFF", (("to", to), ("from", from_), ("requestId", request_id), ("task", task)))
    return _render_task(
        "HANDOFF", to, from_, original_from, request_id, task, context,
        _checked_depth(depth, "HANDOFF", max_depth_cap), callback, priority,
    )


def build_broadcast(
    *,
    from_: str | None = None,
    message: str | None = None,
    request_id: str | None = None,
    context: str | None = None,
    depth: Depth | tuple[int, int] | None = None,
    expires: str | None = None,
    max_depth_cap: int = MAX_DEPTH_CAP,
) -> str:
    """Announce `message` to every bot (`@all`); `expires` is the article dialect's field."""
    _require("BROADCAST", (("from", from_), ("message", message)))
    checked = _checked_depth(depth, "BROADCAST", max_depth_cap)
    return _render(
        "BROADCAST",
        "all",
        [
            ("From", from_),
            ("RequestId", _request_id("BROADCAST", request_id, from_)),
            ("Message", message),
            ("Context", context),
            ("Expires", expires),
            ("Depth", str(checked)),
        ],
    )


def _render_task(
    message_type: str,
    to: Any,
    from_: Any,
    original_from: str | None,
    request_id: Any,
    task: Any,
    context: str | None,
    depth: Depth,
    callback: str | None,
    priority: str | None,
) -> str:
    """REQUEST and HANDOFF share one layout (the reference's field order)."""
    _check_priority(priority)
    return _render(
        message_type,
        to,
        [
            ("From", from_),
            ("OriginalFrom", original_from),
            ("RequestId", request_id),
            ("Task", task),
            ("Context", context),
            ("Depth", str(depth)),
            ("Callback", callback),
            ("Priority", priority),
        ],
    )


def _render(message_type: str, to: str, fields: Iterable[Field]) -> str:
    to = _target(to)
    present = [(key, value) for key, value in fields if value]
    if not _all_plain_lines(present):
        for key, value in present:
            _check_value(key, value)
    parts = [FENCE, "\n[", message_type, " → @", to, "]\n"]
    for key, value in present:
        parts += (key, ": ", value, "\n")
    parts.append(FENCE)
    return "".join(parts)


def _all_plain_lines(fields: list[tuple[str, str]]) -> bool:
    """Fast path: single-line text values without backticks need no closer look."""
    try:
        return _NEEDS_A_CLOSER_LOOK.search("".join(value for _, value in fields)) is None
    except TypeError:  # a non-text value; _check_value names it
        return False


def _require(message_type: str, fields: Iterable[tuple[str, str | None]]) -> None:
    for name, value in fields:
        if value is not None and not isinstance(value, str):
            kind = type(value).__name__
            raise ValueError(f"{message_type} field {name} must be text, got {kind}")
        if _blank(value):
            raise ValueError(f"{message_type} requires field: {name}")


def _request_id(message_type: str, request_id: str | None, from_: str | None) -> str:
    """The given request id, or a generated one when none is given (None or "").

    Whitespace alone is refused: it would render as an empty `RequestId:` that no parser
    accepts, and a builder must never emit a message it cannot read back.
    """
    if not request_id:
        return generate_request_id(from_ or "")
    if _blank(request_id):
        raise ValueError(f"{message_type} field requestId is blank")
    return request_id


def _blank(value: str | None) -> bool:
    return not value or not value.strip(JS_WHITESPACE)


def _checked_depth(
    depth: Depth | tuple[int, int] | None, message_type: str, max_depth_cap: int
) -> Depth:
    checked = DEFAULT_DEPTH if depth is None else coerce_depth(depth)
    check_depth(checked, message_type, max_depth_cap)
    return checked


def _check_priority(priority: str | None) -> None:
    if priority and (not isinstance(priority, str) or priority not in PRIORITIES):
        raise ValueError(f"priority must be one of low, normal, high (got {priority!r})")


def _target(to: str) -> str:
    """`to` as the header writes it: a name with blanks or ``` is percent-encoded
    (bridge.protocol.names), so a person called "Ada Lovelace" can be answered."""
    if not isinstance(to, str):
        raise ValueError(f"to must be text, got {type(to).__name__}")
    return encode_name(to)


def _check_value(key: str, value: str) -> None:
    """Refuse a value that the parser would not read back as exactly this value."""
    if not isinstance(value, str):
        raise ValueError(f"{key} must be text, got {type(value).__name__}")
    if FENCE in value:
        raise ValueError(f"{key} must not contain ``` (it would close the protocol block)")
    if "\n" not in value and not _LINE_BREAK.search(value):
        return  # the common single-line value
    first_line, *more_lines = value.split("\n")
    if _LINE_BREAK.search(first_line.lstrip(JS_WHITESPACE)):
        raise ValueError(
            f"{key}: its first line must not contain CR, U+2028 or U+2029 "
            "(the field line would not be recognised); use escape_value()"
        )
    for line in more_lines:
        if is_field_line(line):
            raise ValueError(
                f"{key}: the line {line[:40]!r} would be read as a new field; "
                "indent it or use escape_value()"
            )
