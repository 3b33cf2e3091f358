"""The one percentile every figure uses (Qt-free, numpy-free).

Nearest rank: the ``p`` th percentile of ``n`` ascending values is the value
at 1-based rank ``ceil(p / 100 * n)`` (at least 1, at most ``n``): the
smallest value with at least ``p`` % of the values at or below it, so a p99 is
always a value that was measured. ``nearest_rank`` is the one place the rule
is written: ``percentile`` (event-loop lag in ``lanemon.work.lag``, customer
waits in ``lanemon.counters``, the benchmarks) and the window's numpy
``lanemon.ui.heartbeat.timer.lag_stats`` both index with it.

The rank is computed without binary-fraction noise (``ceil(7 / 100 * 100)``
is 8 in floating point; here it is 7): ``p * n / 100`` is rounded to 9
decimals before the ceiling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def nearest_rank(n: int, p: float) -> int:
    """1-based nearest rank of the ``p`` th percentile (0..100) among ``n >= 1`` values."""
    rank = math.ceil(round(p * n / 100.0, 9))
    return 1 if rank < 1 else (n if rank > n else rank)


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of an ascending sequence (0.0 for an empty one)."""
    n = len(sorted_values)
    if not n:
        return 0.0
    return sorted_values[nearest_rank(n, p) - 1]
