"""What the rules bot can do: arithmetic, the UTC time, and a canned weather table.

Pure functions, no network and no clock of their own (the caller passes `now`), so every
answer is deterministic and testable. A task is either answered (`Answer`, done or failed)
or needs one more piece of information first (`NeedsDetail`), which the caller turns into a
CLARIFY and completes later with `complete_detail`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from bridge.bcn.examples.arithmetic import CannotCompute, evaluate, find_expression, format_number

WEATHER: dict[str, str] = {
    "Paris": "18°C, partly cloudy",
    "London": "14°C, light rain",
    "New York": "22°C, sunny",
    "Tokyo": "26°C, humid and clear",
    "Berlin": "16°C, overcast",
    "Sydney": "20°C, windy",
}
"""The canned table; deterministic on purpose, this bot never calls a weather service."""

HELP_TEXT = (
    "I can compute arithmetic (\"compute 2 + 3 * 4\"), tell the current UTC time (\"time\") "
    f"and the weather in {', '.join(WEATHER)} (\"weather in Paris\")."
)

Skill = Literal["compute", "weather"]
"""The skills that can ask a clarifying question."""


@dataclass(frozen=True, slots=True)
class Answer:
    """The outcome of a task: `status` is the protocol's done or failed."""

    status: Literal["done", "failed"]
    text: str


@dataclass(frozen=True, slots=True)
class NeedsDetail:
    """The task is ambiguous: `skill` needs an answer to `question` first."""

    skill: Skill
    question: str
    options: tuple[str, ...] = ()
    """Answers to offer as buttons (the CLARIFY's `Options:`), when there are few."""


Outcome = Answer | NeedsDetail

_WEATHER_WORD = re.compile(r"\bweather\b|\bforecast\b", re.IGNORECASE)
_TIME_WORDS = re.compile(r"\btime\b|\bclock\b|\bwhat\s+day\b|\bdate\b", re.IGNORECASE)
_COMPUTE_WORDS = re.compile(r"\b(compute|calculate|calc|evaluate|solve)\b", re.IGNORECASE)
_CITY_AFTER = re.compile(r"\b(?:in|for|at)\s+([^\n;,.?!]+)", re.IGNORECASE)
_KNOWN_CITY = {city.lower(): city for city in WEATHER}


def interpret(task: str, now: datetime) -> Outcome:
    """Decide what `task` asks for and answer it, or say what is missing."""
    if _WEATHER_WORD.search(task):
        return _weather(task, asking=True)
    expression = find_expression(task)
    if _TIME_WORDS.search(task) and expression is None:
        return Answer("done", utc_timestamp(now))
    if expression is not None:
        return _compute(expression)
    if _COMPUTE_WORDS.search(task):
        return NeedsDetail("compute", "What should I compute? For example: 2 + 3 * 4")
    return Answer("failed", f"unknown task. {HELP_TEXT}")


def complete_detail(skill: Skill, detail: str) -> Answer:
    """Finish a task that `interpret` found ambiguous, using the requester's answer."""
    if skill == "weather":
        outcome = _weather(detail, asking=False)
        assert isinstance(outcome, Answer)  # asking=False never asks back
        return outcome
    expression = find_expression(detail)
    if expression is None:
        return Answer("failed", f"{detail.strip()!r} has nothing to compute")
    return _compute(expression)


def utc_timestamp(now: datetime) -> str:
    """ISO-8601 in UTC to the second, with a Z: 2026-03-01T12:00:00Z."""
    moment = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    return moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _compute(expression: str) -> Answer:
    try:
        value = evaluate(expression)
    except CannotCompute as exc:
        return Answer("failed", f"cannot compute {expression}: {exc}")
    return Answer("done", f"{expression} = {format_number(value)}")


def _weather(text: str, *, asking: bool) -> Outcome:
    """Find the city in `text`; with `asking`, a missing city is a question, not a failure."""
    lowered = text.lower()
    for key, city in _KNOWN_CITY.items():
        if re.search(rf"\b{re.escape(key)}\b", lowered):
            return Answer("done", f"Weather in {city}: {WEATHER[city]}")
    named = _CITY_AFTER.search(text)
    if named is None and not asking:
        named_city = _WEATHER_WORD.sub("", text).strip(" \t\n.?!")
    else:
        named_city = named.group(1).strip() if named else ""
    if named_city:
        return Answer("failed", f"no weather data for {named_city}; I know {', '.join(WEATHER)}")
    if asking:
        return NeedsDetail("weather", f"Which city? I know {', '.join(WEATHER)}.",
                           options=tuple(WEATHER))
    return Answer("failed", f"no city given; I know {', '.join(WEATHER)}")
