"""Heartbeat pieces that need no window: statistics and the ring buffer."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from lanemon.ui.heartbeat.column_max import ColumnMax
from lanemon.ui.heartbeat.timer import Heartbeat, lag_stats
from lanemon.work.lag import summarize


@pytest.mark.parametrize("n", [0, 1, 2, 7, 100, 1001])
def test_lag_stats_match_summarize(n):
    rng = random.Random(n)
    values = [rng.expovariate(1.0) * 5 for _ in range(n)]
    ours, theirs = lag_stats(np.array(values)), summarize(values)
    assert ours.samples == theirs.samples
    for name in ("p50", "p99", "max", "late_ms"):
        assert getattr(ours, name) == pytest.approx(getattr(theirs, name))


def test_decimation_keeps_every_stall():
    x = np.linspace(100.0, 120.0, 20_000)
    y = np.zeros_like(x)
    y[[5, 7_777, 19_998]] = [300.0, 40.0, 900.0]
    columns = ColumnMax(500, 20.0 / 500)
    for a in range(0, x.size, 333):                  # ticks arrive a frame's worth at a time
        columns.add(x[a:a + 333], y[a:a + 333])
    xd, yd = columns.window(100.0, 120.0)
    assert np.all(np.diff(xd) > 0)                   # one point per column, oldest first
    assert sorted(yd[yd > 0].tolist()) == [40.0, 300.0, 900.0]


def test_ring_buffer_wraps_and_keeps_order(qapp):
    hb = Heartbeat(period_ms=10, capacity=8)
    for _ in range(20):   # ticks without a loop: call the tick directly
        hb._tick()
    t, lag = hb.between(0, hb.count)
    assert hb.count == 20 and t.size == 8          # only the last `capacity` are kept
    assert np.all(np.diff(t) >= 0)
    assert len(list(hb.to_csv_rows())) == 8


@pytest.mark.parametrize("bad", [0, 101, 2.5, True])
def test_period_is_checked(qapp, bad):
    hb = Heartbeat()
    with pytest.raises((ValueError, TypeError)):
        hb.set_period_ms(bad)


def test_chart_top_is_on_a_coarse_ladder_above_the_peak():
    from lanemon.ui.heartbeat.chart import MIN_TOP_MS, nice_top

    assert nice_top(0.0) == MIN_TOP_MS
    tops = set()
    for peak in [0.5 * 1.07 ** i for i in range(200)]:
        top = nice_top(peak)
        assert top >= peak * 1.18 and top >= MIN_TOP_MS   # the peak is never cut off
        mantissa = top / 10 ** math.floor(math.log10(top))
        assert round(mantissa, 6) in (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)
        tops.add(top)
    assert len(tops) < 40   # few distinct tops: the axis re-renders rarely
