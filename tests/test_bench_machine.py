"""``lanemon.bench.machine``: the machine's own stalls, noted by a pinned real-time sleeper,
and the lag a heartbeat tick is answerable for once they are taken out."""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np
import pytest

from lanemon.bench.machine import GAP_MS, MachineStalls, unexplained_ms


def test_a_ticks_lag_loses_only_its_overlap_with_the_stalls():
    t = np.array([1.000, 2.000, 3.000, 4.000, 5.000])
    lag = np.array([30.0, 30.0, 30.0, 5.0, 40.0])
    stalls = [(0.975, 0.995),            # 20 ms inside tick 1's late span [0.970, 1.000]
              (1.950, 1.990),            # 40 ms, only 20 of them inside tick 2's [1.970, 2.000]
              (3.100, 3.200),            # after tick 3: nothing off
              (4.990, 4.996), (4.997, 5.010)]   # two, partly inside tick 5's [4.960, 5.000]
    got = unexplained_ms(t, lag, stalls)
    assert got == pytest.approx([10.0, 10.0, 30.0, 5.0, 40.0 - 6.0 - 3.0])
    assert list(lag) == [30.0, 30.0, 30.0, 5.0, 40.0]        # the input is left alone


def test_a_stall_longer_than_the_late_span_leaves_nothing_and_no_stalls_leave_all():
    t, lag = np.array([1.0]), np.array([12.0])
    assert unexplained_ms(t, lag, [(0.9, 1.1)]) == pytest.approx([0.0])
    assert unexplained_ms(t, lag, []) == pytest.approx([12.0])
    assert unexplained_ms(np.array([]), np.array([]), [(0.0, 1.0)]).size == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pinning and one clock: Linux only")
def test_the_sentinel_notes_the_time_it_could_not_run_and_stops_once():
    """The sentinel is stopped (SIGSTOP) for 80 ms: it notes a span covering that time (it
    could not run; on a machine that paused meanwhile the span is longer, never shorter)."""
    cpu = max(os.sched_getaffinity(0))
    m = MachineStalls(cpu)
    time.sleep(0.05)
    os.kill(m.pid, signal.SIGSTOP)
    t_stop = time.perf_counter()
    time.sleep(0.08)
    t_cont = time.perf_counter()
    os.kill(m.pid, signal.SIGCONT)
    time.sleep(0.05)
    spans = m.stop()
    assert m.stopped
    with pytest.raises(RuntimeError, match="stopped already"):
        m.stop()
    assert all(a < b for a, b in spans) and spans == sorted(spans)
    assert all(b - a > GAP_MS / 1000 - 0.001 for a, b in spans)
    covering = [(a, b) for a, b in spans if a <= t_stop + 0.002 and b >= t_cont]
    assert covering, (t_stop, t_cont, spans)
    if os.geteuid() == 0:             # root may take a real-time priority: the spans are held
        assert m.available            # against the pinned loop (CI runs as root)
