"""Times as exact integer microseconds since the epoch, the one way stores write a datetime.

Integers keep every microsecond (a float would lose the last digit) and order like the times
they encode, so a SQLite index or a Redis sorted-set score ranges over them directly.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_micros(moment: datetime) -> int:
    """Exact integer microseconds since the epoch (floats would lose the last digit)."""
    return (moment - _EPOCH) // _MICROSECOND


def from_micros(micros: int) -> datetime:
    return _EPOCH + _MICROSECOND * micros  # exact, and cheaper than timedelta(0, 0, micros)
