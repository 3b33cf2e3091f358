"""The one percentile every figure uses (Qt-free, numpy-free).

Nearest rank: the smallest value with at least ``p`` % of the values at or
below it, so a p99 is always a value that was measured. ``lanemon.work.lag``
(event-loop lag), ``lanemon.counters`` (customer waits) and the benchmarks
use it; the window's numpy twin is ``lanemon.ui.heartbeat.timer.lag_stats``.
"""

from __future__ import annotations

import math


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile of an ascending list (0.0 for an empty one)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]
