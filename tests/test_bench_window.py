"""The window benches' harness (``lanemon.bench._window``): what it does to the window it
measures is not drawn on the window's chart as the window's own."""

from __future__ import annotations

import asyncio
import time

from lanemon.bench._window import bare_loop, floor_segment, settled
from lanemon.ui.tools.testing import run_window, wait_until


def test_a_bare_loop_starts_and_ends_while_the_window_is_quiet(qtbot):
    """The floor's child process is started, recorded and ended (each ~0.1 s of the window's
    loop waiting) with no own stall reported: none of it is drawn and labelled on the chart
    the bench measures next (the idle chart frame was measured with a 119 ms "blocked in
    BareLoop.close" spike and label scrolling through it)."""
    async def scenario(win):
        await settled(win)
        assert win.own_watchdog.running
        t0 = time.perf_counter()
        with bare_loop(win, 0.05) as bare:
            lags = floor_segment(win, bare, 0.1)
        t1 = time.perf_counter()
        # a stall is reported after the loop comes back (a signal queued from the watchdog's
        # thread): the heartbeat ticking again, several times over, is after any report
        count = win.heartbeat.count
        await wait_until(lambda: win.heartbeat.count >= count + 10, 10)
        await asyncio.sleep(0)
        own = [(b.culprit, round(b.duration_ms)) for b in win.chart.own_blocks
               if t0 - 0.01 <= b.t_start <= t1]
        return lags, own, win.own_watchdog.running, win.heartbeat.running

    rc, (lags, own, watching, beating), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert lags                                   # the floor was recorded
    assert own == []
    assert watching and beating                   # both started again after each quiet step


def test_quiet_does_not_start_what_the_window_s_shutdown_stopped(qtbot):
    """A scenario cancelled because the window ended closes its floor's child in
    ``bare_loop``'s ``finally``, inside ``quiet``: the heartbeat and the watchdog thread of the
    shut window were started again there."""
    from lanemon.bench._window import quiet

    async def scenario(win):
        await settled(win)
        await win.shutdown()
        with quiet(win):
            pass
        return win.shutting_down, win.heartbeat.running, win.own_watchdog.running

    rc, (shutting_down, beating, watching), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert shutting_down and not beating and not watching
