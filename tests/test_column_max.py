"""ColumnMax: the per-column maxima are the same however the ticks arrive."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lanemon.ui.heartbeat.column_max import ColumnMax


def _brute(t, lag, dt, t0, t1, keep_from):
    """Columns k0..k1 (and k >= keep_from) that hold a tick: (k * dt, max lag)."""
    k0, k1 = math.floor(t0 / dt), math.floor(t1 / dt)
    out = {}
    for ti, li in zip(t, lag):
        k = math.floor(ti / dt)
        if k0 <= k <= k1 and k >= keep_from:
            out[k] = max(out.get(k, -1.0), li)
    ks = sorted(out)
    return [k * dt for k in ks], [out[k] for k in ks]


@settings(max_examples=200, deadline=None)
@given(
    gaps=st.lists(st.floats(0.0005, 0.05), min_size=1, max_size=400),
    lags=st.data(),
    cuts=st.lists(st.integers(0, 400), max_size=8),
    columns=st.integers(4, 300),
    dt=st.sampled_from([0.004, 0.008, 0.0163, 0.05]),
)
def test_maxima_match_a_brute_force_grouping_whatever_the_batches(gaps, lags, cuts, columns, dt):
    t = 1000.0 + np.cumsum(gaps)
    lag = np.array(lags.draw(st.lists(st.floats(0.0, 80.0), min_size=t.size, max_size=t.size)))
    cm = ColumnMax(columns, dt)
    edges = sorted({0, t.size, *[c for c in cuts if c < t.size]})
    for a, b in zip(edges, edges[1:]):                   # the ticks arrive in batches
        cm.add(t[a:b], lag[a:b])
    last = math.floor(t[-1] / dt)
    keep_from = last - cm.capacity + 1                   # the ring keeps the newest columns
    t0, t1 = t[0] - 0.1, t[-1]
    x, y = cm.window(t0, t1)
    bx, by = _brute(t, lag, dt, t0, t1, keep_from)
    assert np.allclose(x, bx) and np.array_equal(y, by)
    assert cm.last_column == last
    # a middle range gives the same columns as the brute force over that range
    mid0, mid1 = t[len(t) // 3], t[2 * len(t) // 3]
    x, y = cm.window(mid0, mid1)
    bx, by = _brute(t, lag, dt, mid0, mid1, keep_from)
    assert np.allclose(x, bx) and np.array_equal(y, by)


def test_a_stall_stays_the_maximum_of_its_column_and_reset_forgets():
    cm = ColumnMax(100, 0.02)
    cm.add(np.array([10.001, 10.005, 10.009]), np.array([0.3, 45.0, 0.4]))   # one column
    cm.add(np.array([10.012]), np.array([0.2]))                              # same column, later
    x, y = cm.window(10.0, 10.05)
    assert list(y) == [45.0] and x[0] == pytest.approx(10.0)
    cm.reset(0.01)
    assert cm.window(10.0, 10.05)[0].size == 0
    assert cm.window(-1.0, 0.0)[0].size == 0      # column -1 too: an empty slot is not a column
    cm.add(np.array([-0.015, 0.001]), np.array([3.0, 4.0]))
    x, y = cm.window(-1.0, 0.005)
    assert list(y) == [3.0, 4.0] and x[0] == pytest.approx(-0.02)
    with pytest.raises(ValueError):
        cm.reset(0.0)


@settings(max_examples=200, deadline=None)
@given(
    gaps=st.lists(st.floats(0.0005, 0.08), min_size=1, max_size=300),
    columns=st.integers(4, 200),
    dt=st.sampled_from([0.004, 0.0163, 0.05]),
    span=st.data(),
)
def test_around_reads_the_same_columns_as_held(gaps, columns, dt, span):
    """``around(a, b, lo, hi)`` (what a frame paints reads, in plain Python) is the part of
    ``held(lo, hi)`` from the held column before ``a`` to the one after ``b``; ``before``
    the held column before ``c``."""
    t = 1000.0 + np.cumsum(gaps)
    lag = np.linspace(0.1, 50.0, t.size)
    cm = ColumnMax(columns, dt)
    cm.add(t, lag)
    last = cm.last_column
    lo = span.draw(st.integers(last - cm.capacity - 5, last))
    hi = span.draw(st.integers(lo, last + 3))
    a = span.draw(st.integers(lo - 3, hi + 3))
    b = span.draw(st.integers(a, hi + 80))
    cols, peaks = cm.held(lo, hi)
    cols, peaks = cols.tolist(), peaks.tolist()
    before = [i for i, k in enumerate(cols) if k < a]
    after = [i for i, k in enumerate(cols) if k > b]
    keep = before[-1:] + [i for i, k in enumerate(cols) if a <= k <= b] + after[:1]
    assert cm.around(a, b, lo, hi) == ([cols[i] for i in keep], [peaks[i] for i in keep])
    earlier = cm.held(lo, a - 1)[0].tolist()
    assert cm.before(a, lo) == (earlier[-1] if earlier else None)


def test_to_view_list_is_to_view_per_value():
    from lanemon.ui.heartbeat.y_scale import LOG_FLOOR_MS, YScale

    values = [0.0, LOG_FLOOR_MS / 2, LOG_FLOOR_MS, 0.37, 16.7, 400.0, 123456.0]
    for log in (False, True):
        scale = YScale(log=log)
        assert scale.to_view_list(values) == [scale.to_view(v) for v in values]


def test_the_ring_keeps_no_python_number_per_column():
    """Folding in ticks keeps no Python object per column: a ring of Python floats and ints
    pinned the arenas a 99,999-job burst took (one float of each frame's ticks in each) after
    its Reset. 2,000 columns' ticks (each tick's lag a new float) leave the traced memory
    where it was, give or take what one frame's temporaries cost."""
    import tracemalloc

    cm = ColumnMax(2048, 0.01)
    cm.add_few([0.0], [1.0])
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for k in range(2000):
            cm.add_few([k * 0.01 + 0.001, k * 0.01 + 0.002], [float(k) + 0.25, float(k) + 0.5])
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(d.size_diff for d in after.compare_to(before, "filename"))
    assert cm.held(0, 1999)[1].tolist() == [1.0] + [float(k) + 0.5 for k in range(1, 2000)]
    assert grown < 8_000, f"{grown} bytes kept by 2,000 columns"
