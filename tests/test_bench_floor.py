"""The bare-loop floor process the window benchmarks are judged against (no timed asserts)."""

from __future__ import annotations

import pytest

from lanemon.bench.floor import BareLoop


def test_a_segment_is_the_heartbeat_of_a_bare_loop_over_that_time():
    with BareLoop(10, settle_s=0.05) as bare:
        first = bare.record(0.3)
        second = bare.record(0.3)
        with pytest.raises(ValueError, match="more than 0"):
            bare.record(0)
    # ~30 ticks of a 10 ms heartbeat in 0.3 s; a loaded machine may take fewer, never none
    assert 0 < len(first) <= 40 and 0 < len(second) <= 40
    assert all(v >= 0.0 for v in first + second)
    with pytest.raises(RuntimeError, match="closed"):
        bare.record(0.1)


def test_a_floor_process_that_died_is_said():
    bare = BareLoop(10, settle_s=0.05)
    try:
        bare._proc.kill()
        bare._proc.wait()
        with pytest.raises(RuntimeError, match=r"the bare-loop floor process ended \(exit -9\)"):
            bare.record(0.1)
    finally:
        bare.close()


def test_the_busy_control_runs_its_timer_only_while_a_segment_is_recorded():
    with BareLoop(10, settle_s=0.05, busy_ms=0.2) as busy:
        lags = busy.record(0.5)
        assert lags and all(v >= 0.0 for v in lags)
        # a 30 fps timer over the settle and the segment: some slots, never more than the time allows
        assert 0 < busy.busy_runs <= 30
    with BareLoop(10, settle_s=0.05) as bare:
        bare.record(0.2)
        assert bare.busy_runs == 0
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="busy_ms"):
            BareLoop(10, busy_ms=bad)


def test_the_busy_control_ticks_at_the_heartbeat_charts_frame_rate():
    from lanemon.bench.floor import BUSY_FPS
    from lanemon.ui.heartbeat.chart import FPS

    assert BUSY_FPS == FPS      # the control stands for the chart's frames
