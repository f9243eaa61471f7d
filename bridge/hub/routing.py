"""Who answers a message and who only observes it: pure decisions.

Priority: the message's structured `routing` field, then `@mentions` in its text (plus
names the platform already resolved), then the default — the group's driver answers
(`chat.send`) and everyone else observes (`chat.inject`). The sender never receives its
own message unless `include_self` says so. Plain functions over plain data, so every rule
is tested without a socket.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

ALL = "all"
"""`@all` addresses every participant."""

Rule = Literal["routing", "mentions", "default", "observe", "nobody"]


class RoutingError(ValueError):
    """A `routing` object that does not have the shape BCN's routing rules describe."""


@dataclass(frozen=True, slots=True)
class Participant:
    bot_uuid: str
    name: str
    online: bool = True


@dataclass(frozen=True, slots=True)
class Selector:
    type: Literal["name", "bot"]
    value: str


@dataclass(frozen=True, slots=True)
class RoutingRequest:
    """The `routing` field of a final (or of a channel inbound)."""

    responders: tuple[Selector, ...]
    mode: Literal["required", "optional"] = "required"
    reason: str = ""
    include_self: bool = False


@dataclass(frozen=True, slots=True)
class RouteDecision:
    """Online bots to `chat.send` and to `chat.inject`, and why."""

    send: tuple[str, ...]
    inject: tuple[str, ...]
    rule: Rule
    addressed: frozenset[str] = field(default_factory=frozenset)
    """uuids of the bots the message addressed (mentioned or selected), online or not."""


def parse_routing(raw: object) -> RoutingRequest | None:
    """Validate a `routing` object; None when absent. Raises `RoutingError` on bad shape."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise RoutingError("routing must be an object")
    responders = raw.get("responders", [])
    if not isinstance(responders, list):
        raise RoutingError("routing.responders must be a list")
    selectors = []
    for index, item in enumerate(responders):
        if not isinstance(item, Mapping):
            raise RoutingError(f"routing.responders[{index}] must be an object")
        kind, value = item.get("type"), item.get("value")
        if kind not in ("name", "bot"):
            raise RoutingError(f"routing.responders[{index}].type must be 'name' or 'bot'")
        if not isinstance(value, str) or not value:
            raise RoutingError(f"routing.responders[{index}].value must be a non-empty string")
        selectors.append(Selector(kind, value))
    mode = raw.get("mode", "required")
    if mode not in ("required", "optional"):
        raise RoutingError("routing.mode must be 'required' or 'optional'")
    include_self = raw.get("include_self", False)
    if not isinstance(include_self, bool):
        raise RoutingError("routing.include_self must be true or false")
    reason = raw.get("reason", "")
    return RoutingRequest(tuple(selectors), mode, str(reason or ""), include_self)


def find_mentions(text: str, names: Iterable[str]) -> list[str]:
    """Names mentioned as `@name` in `text`, in order of first mention, each once.

    Matching is case-insensitive and tries the longest name first, so `@Mantis Prime`
    mentions "Mantis Prime" rather than "Mantis". A mention must start a word and end
    one (`x@Helper` and `@Helpers` mention nobody). `@all` comes back as `"all"`.
    """
    if "@" not in text:
        return []
    # Compare slices of the text itself: casefolding the whole text first would shift
    # every index after a character whose folded form is longer ("ß" → "ss").
    candidates = sorted(((name, name.casefold()) for name in {*names, ALL}),
                        key=lambda pair: len(pair[0]), reverse=True)
    found: list[str] = []
    start = text.find("@")
    while start != -1:
        if start == 0 or not _is_word_char(text[start - 1]):
            for name, folded in candidates:
                end = start + 1 + len(name)
                if text[start + 1:end].casefold() == folded and (
                    end == len(text) or not _is_word_char(text[end])
                ):
                    if name not in found:
                        found.append(name)
                    break
        start = text.find("@", start + 1)
    return found


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char in "_-"


def decide_route(
    participants: Sequence[Participant],
    *,
    driver_uuid: str | None,
    sender_uuid: str | None = None,
    text: str = "",
    mentions: Iterable[str] = (),
    routing: RoutingRequest | None = None,
    observe: bool = False,
    default_to_driver: bool = True,
) -> RouteDecision:
    """Decide the deliveries for one message.

    `mentions` are names resolved elsewhere (the platform's own mention syntax).
    `routing.mode = optional` falls back to mentions/default when no selected bot is
    online; `required` never falls back. `observe` makes everyone an observer.
    `default_to_driver=False` makes an unaddressed message observed by all.
    """
    include_self = routing.include_self if routing is not None else False
    audience = [p for p in participants if include_self or p.bot_uuid != sender_uuid]
    if observe:
        return _split(audience, frozenset(), "observe", frozenset())

    if routing is not None:
        chosen = _select(audience, routing.responders)
        if routing.mode == "required" or any(p.online for p in audience if p.bot_uuid in chosen):
            return _split(audience, chosen, "routing", chosen)

    by_folded = {p.name.casefold(): p for p in participants}
    named = find_mentions(text, (p.name for p in participants))
    named += [name for name in mentions if name.casefold() in by_folded or name.casefold() == ALL]
    if named:
        if any(name.casefold() == ALL for name in named):
            everyone = frozenset(p.bot_uuid for p in audience)
            return _split(audience, everyone, "mentions", everyone)
        chosen = frozenset(by_folded[name.casefold()].bot_uuid for name in named)
        return _split(audience, chosen & {p.bot_uuid for p in audience}, "mentions", chosen)

    if default_to_driver and driver_uuid is not None:
        return _split(audience, frozenset({driver_uuid}), "default", frozenset())
    return _split(audience, frozenset(), "nobody", frozenset())


def _select(audience: Sequence[Participant], selectors: Iterable[Selector]) -> frozenset[str]:
    chosen: set[str] = set()
    for selector in selectors:
        for p in audience:
            if selector.type == "bot" and p.bot_uuid == selector.value:
                chosen.add(p.bot_uuid)
            elif selector.type == "name" and p.name.casefold() == selector.value.casefold():
                chosen.add(p.bot_uuid)
    return frozenset(chosen)


def _split(
    audience: Sequence[Participant], chosen: frozenset[str], rule: Rule, addressed: frozenset[str]
) -> RouteDecision:
    online = [p for p in audience if p.online]
    send = tuple(p.bot_uuid for p in online if p.bot_uuid in chosen)
    inject = tuple(p.bot_uuid for p in online if p.bot_uuid not in chosen)
    return RouteDecision(send, inject, rule, addressed)


@dataclass(frozen=True, slots=True)
class RoledParticipant:
    """A participant with its role in the group, as `route.resolve` reports it."""

    bot_uuid: str
    name: str
    role: str


def resolve_selectors(
    participants: Sequence[RoledParticipant], selectors: object
) -> dict[str, object]:
    """`route.resolve` (the BCN server's semantics): selectors → canonical bot selectors.

    Names match exactly (case-sensitive, unlike @mentions); every selector must match or
    the answer is `ok: false` with an error code, a message and `candidates` to choose
    from. A well-formed request always gets a payload; only its shape can fail.
    """
    if not isinstance(selectors, list) or not selectors:
        return _unresolved(participants, "INVALID_ROUTE_SELECTOR",
                           "'selectors' must be a non-empty array")
    resolved: list[dict[str, object]] = []
    for item in selectors:
        kind = item.get("type") if isinstance(item, Mapping) else None
        raw = item.get("value") if isinstance(item, Mapping) else None
        value = raw.strip() if isinstance(raw, str) else ""
        if kind not in ("bot", "name"):
            return _unresolved(participants, "INVALID_ROUTE_SELECTOR",
                               f"unsupported route selector type {kind!r}")
        if not value:
            return _unresolved(participants, "INVALID_ROUTE_SELECTOR",
                               f"{kind!r} selector requires a non-empty value")
        match = next((p for p in participants
                      if (p.bot_uuid if kind == "bot" else p.name) == value), None)
        if match is None:
            return _unresolved(participants, "UNKNOWN_ROUTE_TARGET",
                               f"No participant matched {kind} \"{value}\"", query=value)
        if all(target["value"] != match.bot_uuid for target in resolved):
            resolved.append({"type": "bot", "value": match.bot_uuid, "bot_name": match.name,
                             "role": match.role})
    return {"ok": True, "resolved": resolved}


def _unresolved(
    participants: Sequence[RoledParticipant], error: str, message: str, query: str = ""
) -> dict[str, object]:
    folded = query.casefold()
    near = [p for p in participants if folded and (
        folded in p.bot_uuid.casefold() or folded in p.name.casefold()
        or p.name.casefold() in folded)]
    return {"ok": False, "error": error, "message": message,
            "candidates": [{"bot_uuid": p.bot_uuid, "bot_name": p.name, "role": p.role}
                           for p in near or participants]}
