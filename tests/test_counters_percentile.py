"""One percentile: the rank rule of lanemon.stats, used by the counters' waits, the
lag summary and the window's numpy lag_stats alike."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lanemon.stats import nearest_rank, percentile
from lanemon.ui.heartbeat.timer import lag_stats
from lanemon.work.lag import summarize


def _exact_rank(n, p):
    """ceil(p/100 * n) in exact decimal arithmetic, clamped to 1..n."""
    return min(n, max(1, math.ceil(Fraction(str(p)) * n / 100)))


@given(st.integers(1, 100_000), st.sampled_from([0, 1, 7, 25, 50, 57, 90, 95, 99, 99.9, 100]))
@settings(max_examples=400, deadline=None)
def test_nearest_rank_is_exact(n, p):
    assert nearest_rank(n, p) == _exact_rank(n, p)


def test_nearest_rank_edges():
    assert nearest_rank(100, 7) == 7  # ceil(7 / 100.0 * 100) is 8 in floating point
    assert percentile([float(v) for v in range(1, 101)], 7) == 7.0
    assert nearest_rank(1, 0) == 1 and nearest_rank(1, 100) == 1
    assert nearest_rank(10, 100) == 10 and nearest_rank(10, 0) == 1
    assert percentile([], 99) == 0.0
    assert percentile([3.0, 1.0][::-1], 50) == 1.0


lags = st.lists(st.floats(0, 1e4, allow_nan=False), min_size=0, max_size=400)


@given(lags)
@settings(max_examples=300, deadline=None)
def test_lag_stats_and_summarize_agree(values):
    """The window's numpy figures and the Qt-free ones are the same numbers."""
    a = lag_stats(np.asarray(values, dtype=np.float64))
    b = summarize(values)
    assert (a.samples, a.p50, a.p99, a.max) == (b.samples, b.p50, b.p99, b.max)
    assert a.late_ms == pytest.approx(b.late_ms, rel=1e-9, abs=1e-9)
    ordered = sorted(values)
    assert a.p99 == percentile(ordered, 99) and a.p50 == percentile(ordered, 50)
