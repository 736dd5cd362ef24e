"""Figures from timings: percentiles, ratios, the best of repeated rounds, the machine's
load, and the line the bench logs its progress with."""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile; ``nan`` for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(math.ceil(pct / 100 * len(ordered)), 1)
    return ordered[rank - 1]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def p50_p99_ms(seconds: Sequence[float]) -> tuple[float, float]:
    return ms(percentile(seconds, 50)), ms(percentile(seconds, 99))


def ratio(value: float, base: float) -> float | None:
    if not base or math.isnan(base) or math.isnan(value):
        return None
    return round(value / base, 2)


def timed_calls(fn: Callable[[], object], count: int) -> list[float]:
    """Seconds taken by each of ``count`` calls of ``fn``, after one untimed warm-up call."""
    fn()
    latencies = []
    for _ in range(count):
        start = time.perf_counter()
        fn()
        latencies.append(time.perf_counter() - start)
    return latencies


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def log(message: str) -> None:
    print(f"[bench {datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


class DrainRun(Protocol):
    """A dataclass of one drain's figures (``dataclasses.replace`` takes it)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]
    jobs_per_second: float
    samples_jobs_per_second: list[float]


def best_of[Run: DrainRun](samples: list[Run]) -> Run:
    """The fastest of repeated runs (background load only ever slows a run down)."""
    best = max(samples, key=lambda item: item.jobs_per_second)
    return replace(best, samples_jobs_per_second=[item.jobs_per_second for item in samples])
