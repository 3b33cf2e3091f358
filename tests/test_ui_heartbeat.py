"""Heartbeat pieces that need no window: statistics and the ring buffer."""

from __future__ import annotations

import gc
import math
import os
import random
import select
import sys
import time

import numpy as np
import pytest

from lanemon.ui.heartbeat.column_max import ColumnMax
from lanemon.ui.heartbeat.timer import WAKE_AFTER_NS, Heartbeat, OnTimeWake, lag_stats
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


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="timerfd is Linux's")


def _readable(fd: int, wait_s: float) -> bool:
    return bool(select.select([fd], [], [], wait_s)[0])


@linux_only
def test_the_wake_is_armed_just_after_each_due_time_and_disarmed_by_stop(qapp):
    hb = Heartbeat(period_ms=10)
    wake = hb.on_time_wake
    assert wake is not None and wake.watched and wake.armed_ns == 0
    for arm in (hb.start, hb._tick):     # the first arm, then each tick's (no loop: called directly)
        before = time.monotonic_ns()
        arm()
        after = time.monotonic_ns()
        # never before the timer's own due time (armed after it, from a later clock reading)
        assert before + 10_000_000 + WAKE_AFTER_NS <= wake.armed_ns <= after + 10_000_000 + WAKE_AFTER_NS
        assert not _readable(wake.fd, 0)
    hb.set_period_ms(25)
    before = time.monotonic_ns()
    hb._tick()
    assert wake.armed_ns >= before + 25_000_000 + WAKE_AFTER_NS
    hb.stop()
    assert wake.armed_ns == 0
    assert not _readable(wake.fd, 0.05)  # (25 ms after it was due: disarmed, it never fires)


@linux_only
def test_the_wake_fd_is_readable_from_its_time_until_armed_again_with_no_read(qapp):
    wake = OnTimeWake.make()
    assert wake is not None
    wake.arm(time.monotonic_ns() + 1_000_000)
    assert _readable(wake.fd, 5.0)
    assert _readable(wake.fd, 0)                     # it stays readable: nobody reads it ...
    wake.arm(time.monotonic_ns() + 3_600 * 10**9)
    assert not _readable(wake.fd, 0)                 # ... until armed again
    wake.arm(time.monotonic_ns() - 1_000_000)        # a time already past: readable at once
    assert _readable(wake.fd, 5.0)
    wake.disarm()
    assert not _readable(wake.fd, 0)


@linux_only
def test_the_wake_fd_is_closed_with_its_heartbeat(qapp):
    """(Through Qt: the notifier is the heartbeat's child and closes the fd when destroyed. A
    notifier Python owned, disabled and deleted from a finaliser, crashed the test run when
    the collector ran it inside the loop's dispatch.)"""
    hb = Heartbeat(period_ms=10)
    fd = hb.on_time_wake.fd
    os.fstat(fd)
    hb.start()
    hb.stop()
    del hb
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(fd)


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
