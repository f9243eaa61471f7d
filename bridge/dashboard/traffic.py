"""The last hour of traffic, for the dashboard's small charts: one point every 10 seconds.

Every figure is read from the bridge's own Prometheus metrics — the same counters `/metrics`
exposes — so the dashboard and a Prometheus server can never disagree. A point holds what
happened during its interval: messages in and out (counter differences), the relay latency's
p50 and p95 (estimated from the histogram's bucket differences, as Prometheus'
`histogram_quantile` does) and the outbox depth sampled at its end. 360 points is an hour;
the ring is bounded, so a bridge that runs for months keeps an hour.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from prometheus_client import Metric

from bridge.metrics import BridgeMetrics

INTERVAL = 10.0
POINTS = 360


def samples(metric: Any, suffix: str = "") -> Iterable[tuple[dict[str, str], float]]:
    """(labels, value) of every sample of a metric object whose name ends with `suffix`."""
    family: Metric
    for family in metric.collect():
        for sample in family.samples:
            if not suffix or sample.name.endswith(suffix):
                yield sample.labels, sample.value


def total(metric: Any, suffix: str = "_total") -> float:
    return sum(value for _, value in samples(metric, suffix))


def by_label(metric: Any, label: str, suffix: str = "_total") -> dict[str, float]:
    found: dict[str, float] = {}
    for labels, value in samples(metric, suffix):
        key = labels.get(label, "")
        found[key] = found.get(key, 0.0) + value
    return found


def buckets(metric: Any) -> dict[float, float]:
    """Cumulative count per upper bound, all label sets summed."""
    found: dict[float, float] = {}
    for labels, value in samples(metric, "_bucket"):
        bound = float(labels["le"])
        found[bound] = found.get(bound, 0.0) + value
    return dict(sorted(found.items()))


def quantile(q: float, cumulative: dict[float, float]) -> float | None:
    """`histogram_quantile`: linear within the bucket the q-th observation falls in."""
    if not cumulative:
        return None
    count = cumulative.get(math.inf, max(cumulative.values()))
    if count <= 0:
        return None
    rank = q * count
    lower, below = 0.0, 0.0
    for bound, seen in cumulative.items():
        if seen >= rank:
            if math.isinf(bound):
                return lower  # beyond the largest finite bucket: say its bound
            in_bucket = seen - below
            return lower + (bound - lower) * ((rank - below) / in_bucket if in_bucket else 1)
        lower, below = bound, seen
    return lower


@dataclass(frozen=True, slots=True)
class Point:
    at: datetime
    in_: int
    out: int
    p50: float | None
    p95: float | None
    outbox: int

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.at.isoformat(), "in": self.in_, "out": self.out,
                "p50": self.p50, "p95": self.p95, "outbox": self.outbox}


class Traffic:
    """Takes a point per call to `sample` (the dashboard calls it every `INTERVAL`)."""

    def __init__(self, metrics: BridgeMetrics, *, points: int = POINTS) -> None:
        self.metrics = metrics
        self.points: deque[Point] = deque(maxlen=points)
        self._last = self._read()

    def _read(self) -> tuple[float, float, dict[float, float]]:
        m = self.metrics
        return total(m.messages_in), total(m.messages_out), buckets(m.relay_seconds)

    def sample(self, now: datetime) -> Point:
        in_, out, cumulative = self._read()
        last_in, last_out, last_buckets = self._last
        self._last = (in_, out, cumulative)
        window = {bound: seen - last_buckets.get(bound, 0.0) for bound, seen in cumulative.items()}
        point = Point(
            at=now,
            in_=int(in_ - last_in),
            out=int(out - last_out),
            p50=quantile(0.5, window),
            p95=quantile(0.95, window),
            outbox=int(total(self.metrics.outbox_depth, "")),
        )
        self.points.append(point)
        return point

    def to_dict(self) -> dict[str, Any]:
        return {"interval_seconds": INTERVAL, "points": [p.to_dict() for p in self.points]}
