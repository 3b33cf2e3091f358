"""The window, driven on a real qasync loop (offscreen).

Behaviour only: no timed asserts. The one lag comparison is relative, within
one test, with a wide margin.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from procs import gone, release

from lanemon.bench._common import child_processes
from lanemon.ui.tools.testing import chart_focused, cold_run_in_flight, run_window, wait_until
from lanemon.work import hash_range, live_worker_pids, warm_pool, worker_processes


@pytest.fixture(autouse=True)
def _app(window_app):
    """The application; afterwards presenter mode's look goes back to the default (a test
    here sets the font scale: the next module's windows were then too wide for its screen)."""
    return window_app


async def _finish(controller, rec, timeout_s=60):
    assert rec is not None
    await wait_until(lambda: rec.status != "running", timeout_s)
    assert rec.status == "done", rec.error
    return rec


def test_window_opens_and_closes_cleanly(qtbot):
    import gc

    async def scenario(win):
        await wait_until(lambda: win.isVisible() and win.heartbeat.count > 5)
        return win.heartbeat.count, gc.get_freeze_count()

    rc, (ticks, frozen), errors = run_window(scenario)
    assert rc == 0
    assert ticks > 5
    assert errors == []
    assert live_worker_pids() == []
    # the window's own objects were kept out of the collector's walks while it ran, not after
    assert frozen > 10_000 and gc.get_freeze_count() == 0


def test_window_keeps_no_source_text_after_start_up(qtbot):
    """PySide6's import hook had ``linecache`` keep the source of every module imported
    after it (~400 files, ~18 MB in the window): dropped once the window is up (before:
    the window's own modules were all there)."""
    import linecache

    import lanemon.ui.shell.main_window as mw

    linecache.getline(mw.__file__, 1)     # (as the import hook leaves it)

    async def scenario(win):
        await wait_until(lambda: win.isVisible() and win.heartbeat.count > 5)
        return set(linecache.cache)

    rc, cached, errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert mw.__file__ not in cached


def test_heartbeat_buffer_receives_ticks(qtbot):
    async def scenario(win):
        hb = win.heartbeat
        await wait_until(lambda: hb.count >= 30)
        t, lag = hb.between(0, hb.count)
        return hb.count, t, lag, hb.period_ms

    rc, (count, t, lag, period), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert count >= 30 and t.size == count
    assert np.all(np.diff(t) > 0)           # one tick after another, in time order
    assert np.all(lag >= 0)
    assert period == 10


def test_the_chart_header_shows_the_live_figures_in_full(qtbot):
    """p50 / p99 / max of the last seconds are in the header, and the last lag in the status
    bar, with room for all of their text (regression: the header's label was given no width
    and showed nothing), in normal and large type."""
    from PySide6.QtGui import QFont, QFontMetrics

    from lanemon.ui.heartbeat.chart import OWN_NOTE, STATS_EVERY

    async def scenario(win):
        live = win.chart.live
        frames = []                             # the chart's frame ticks
        win.chart.frame_timer.timeout.connect(lambda: frames.append(1))
        await wait_until(lambda: live.text().startswith("p50"))
        seen = []
        for scale in (1.0, 1.6):
            win.set_font_scale(scale)
            await wait_until(lambda: win.chart.live.width() > 0, 5)
            shown = len(frames)                 # the next figures, in the new font
            await wait_until(lambda shown=shown: len(frames) > shown + STATS_EVERY, 10)
            bold = QFont(live.font())
            bold.setBold(True)
            figures = [p for p in live.parts if p[0] != OWN_NOTE]   # (the note may elide, the figures not)
            need = sum(QFontMetrics(bold if b else live.font()).horizontalAdvance(t) for t, _, b in figures)
            seen.append((live.text(), live.isVisible(), live.width(), need))
            status = win.lag_label          # the status bar's lag, in full and inside the window
            seen.append((status.text(), status.isVisible(), status.width(),
                         QFontMetrics(status.font()).horizontalAdvance(status.text())))
            right = status.mapTo(win, status.rect().topRight()).x()
            assert right <= win.width(), (right, win.width())
        return seen

    rc, seen, errors = run_window(scenario)
    assert rc == 0 and errors == []
    for text, visible, width, need in seen[0::2]:
        assert text.startswith("p50") and "p99" in text and "max" in text
        assert visible and width >= need
    for text, visible, width, need in seen[1::2]:
        assert text.startswith("lag") and "period" in text
        assert visible and width >= need


def test_each_kind_adds_a_row_with_the_right_result(qtbot):
    total = 200_003

    async def scenario(win):
        c = win.controller
        recs = [await _finish(c, c.start_whole(total)),
                await _finish(c, c.start_sliced(total, slice_ms=4)),
                await _finish(c, c.start_sliced(total, slice_size=30_000))]
        for kind in ("cold", "warm", "thread"):
            recs.append(await _finish(c, c.start_worker(total, kind)))
        runs, placed = win.runs_panel.model, win.placement_panel.placed
        await wait_until(lambda: runs.rowCount() == placed.rowCount() == len(recs), 10)   # the tables follow
        return recs, runs.rowCount(), placed.rowCount()

    rc, (recs, rows, placed), errors = run_window(scenario)
    assert rc == 0 and errors == []
    expected = hash_range(0, total)
    assert [r.kind for r in recs] == ["whole", "sliced", "sliced", "cold", "warm", "thread"]
    assert all(r.result == expected for r in recs)
    assert all(r.stats.samples >= 1 for r in recs)   # the first tick after the run at least
    assert recs[2].slices == 7
    assert rows == 6 and placed == 6
    assert all(r.placement_cold is not None for r in recs)


def test_sliced_stalls_far_less_than_whole(qtbot):
    async def scenario(win):
        c = win.controller
        # wait for the start-up measurements: starting processes stalls the loop a little
        await wait_until(lambda: c.machine.warm_roundtrip_ms is not None or c.machine.errors, 60)
        total = c.iterations_for_ms(350)      # whole blocks for about a third of a second
        whole = await _finish(c, c.start_whole(total))
        sliced = await _finish(c, c.start_sliced(total, slice_ms=8))
        return whole, sliced

    rc, (whole, sliced), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert whole.result == sliced.result
    assert whole.stats.max > 3 * sliced.stats.max
    assert sliced.stats.samples > whole.stats.samples


def test_one_run_at_a_time_per_kind_is_said_not_ignored(qtbot):
    async def scenario(win):
        c = win.controller
        notices = []
        c.notice.connect(notices.append)
        first = c.start_sliced(50_000_000, slice_size=20_000)
        await wait_until(lambda: first.progress > 0)
        second = c.start_sliced(1000, slice_size=100)
        win.runs_panel.refresh()
        label = win.runs_panel.buttons["sliced"].text()
        return first, second, notices, len(c.records), label

    rc, (first, second, notices, n, label), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert second is None and n == 1
    assert any("One sliced run at a time" in m for m in notices)
    assert label != "Sliced" and label.endswith("%")   # the button says it is busy
    assert first.status == "cancelled"   # closing the window cancelled it


def test_closing_during_a_warm_run_leaves_no_child_process(qtbot):
    async def scenario(win):
        c = win.controller
        await wait_until(lambda: c.machine.warm_roundtrip_ms is not None or c.machine.errors, 60)
        rec = c.start_worker(2_000_000_000, "warm")   # minutes of work: still running at close
        await wait_until(lambda: bool(warm_pool().busy_pids()), 20)    # in a worker now
        assert rec.running
        return rec, live_worker_pids()

    rc, (rec, pids), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert pids, "the warm pool should have been running"
    assert rec.status == "cancelled"
    assert live_worker_pids() == []
    assert all(gone(pid) for pid in pids)
    # multiprocessing's resource tracker is the stdlib's, not a worker: it exits with us
    assert child_processes() == []


def test_export_writes_the_seed_report(qtbot, tmp_path):
    total = 300_000

    async def scenario(win):
        c = win.controller
        await wait_until(lambda: c.machine.cold_startup_ms is not None or c.machine.errors, 60)
        for start in (lambda: c.start_whole(total), lambda: c.start_sliced(total, slice_ms=4),
                      lambda: c.start_worker(total, "thread")):
            await _finish(c, start())
        from lanemon.ui.shell import exports

        exports.write_report(str(tmp_path / "report.json"), c.report())
        rows = exports.write_heartbeat_csv(str(tmp_path / "heartbeat.csv"), win.heartbeat)
        win.export_chart_png(str(tmp_path / "chart.png"))
        return rows

    rc, rows, errors = run_window(scenario)
    assert rc == 0 and errors == []
    report = json.loads((tmp_path / "report.json").read_text())
    assert set(report) == {"python", "total", "runs", "slicing", "worker"}
    assert report["total"] == total
    assert set(report["runs"]) == {"whole", "sliced", "worker"}
    for name, run in report["runs"].items():
        keys = {"samples", "p50", "p99", "max", "workMs", "result"} | ({"slices"} if name == "sliced" else set())
        assert set(run) == keys
        assert run["result"] == hash_range(0, total)
    assert set(report["slicing"]) == {"costRatio", "tailRatio", "sliceMs"}
    runs = report["runs"]
    assert report["slicing"]["costRatio"] == round(runs["sliced"]["workMs"] / runs["whole"]["workMs"], 3)
    assert report["slicing"]["sliceMs"] == round(runs["sliced"]["workMs"] / runs["sliced"]["slices"], 3)
    assert report["worker"]["startupMs"] > 0
    lines = (tmp_path / "heartbeat.csv").read_text().splitlines()
    assert lines[0] == "t_s,lag_ms" and len(lines) == rows + 1 and rows > 0
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_says_what_is_missing(qtbot):
    async def scenario(win):
        c = win.controller
        await _finish(c, c.start_whole(10_000))
        try:
            c.report()
        except ValueError as exc:
            return str(exc)
        return None

    rc, message, errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert message and "sliced" in message and "worker" in message


# --- runs in flight: cancel, timeout, died, and the banner ---------------------------------

import signal  # noqa: E402


async def _busy_warm_worker(win, total=2_000_000_000):
    """A warm worker run of minutes started from the window, and its worker's pid."""

    c = win.controller
    await wait_until(lambda: c.machine.warm_roundtrip_ms is not None or c.machine.errors, 60)
    assert not c.machine.errors, c.machine.errors
    pool = warm_pool()
    rec = c.start_worker(total, "warm")
    await wait_until(lambda: pool.busy_pids(), 20)
    return rec, pool, pool.busy_pids()[0]


def test_a_hung_worker_run_is_cancelled_from_the_window_and_worker_runs_work_again(qtbot):
    """Regression: a stopped (SIGSTOP) warm worker held its run for ever, every later worker run
    was refused, and the banner kept the previous run's message."""
    async def scenario(win):
        c, panel = win.controller, win.runs_panel
        await _finish(c, c.start_worker(50_000, "thread"))   # a previous outcome in the banner
        await wait_until(lambda: "done" in panel.banner.text(), 5)
        before = panel.banner.text()
        rec, pool, victim = await _busy_warm_worker(win)
        try:
            os.kill(victim, signal.SIGSTOP)
            panel.refresh()
            in_flight = panel.in_flight.text(), panel.banner.text(), panel.cancel_btn.isEnabled()
            refused = c.start_worker(1_000, "cold")              # one worker run at a time, said
            refusal = panel.banner.text()
            panel.cancel_btn.click()
            await wait_until(lambda: not rec.running, 20)
            await wait_until(lambda: gone(victim) and len(pool.pids()) == pool.size, 20)
            # the panel's coalesced refresh: the banner may be repainted (in flight: nothing) a
            # frame before the buttons are (Cancel: off); wait for both, it must come within 5 s
            await wait_until(lambda: not panel.in_flight.text() and not panel.cancel_btn.isEnabled(), 5)
            cancelled = panel.in_flight.text(), panel.banner.text(), panel.cancel_btn.isEnabled()
            again = await _finish(c, c.start_worker(60_000, "warm"))
            await wait_until(lambda: f"#{again.id}" in panel.banner.text(), 5)
            return before, rec, in_flight, refused, refusal, cancelled, again, panel.banner.text()
        finally:
            release(victim)

    rc, out, errors = run_window(scenario)
    before, rec, in_flight, refused, refusal, cancelled, again, last = out
    flight_text, banner_then, enabled = in_flight
    flight_after, cancelled_text, still_enabled = cancelled
    assert rc == 0 and errors == []
    assert f"#{rec.id - 1}" in before and "done" in before
    # while in flight: the run in flight is described; the previous run's outcome is gone
    assert f"Run #{rec.id}" in flight_text and "running" in flight_text and "Esc" in flight_text
    assert banner_then == "" and enabled
    assert refused is None and "One worker run at a time" in refusal and "Esc" in refusal
    assert rec.status == "cancelled" and rec.result is None
    assert flight_after == ""
    assert f"Run #{rec.id}" in cancelled_text and "cancelled" in cancelled_text
    assert "worker process was stopped" in cancelled_text and not still_enabled
    assert "One worker run at a time" not in cancelled_text     # that refusal is out of date now
    assert again.result == hash_range(0, 60_000)
    assert f"Run #{again.id}" in last and "done" in last and "cancelled" not in last
    assert live_worker_pids() == []


def test_a_run_in_flight_moves_nothing_in_the_runs_panel(qtbot):
    """Regression (``bench lag``'s warm run): the in-flight line was a word-wrapped label shown
    at a run's start and hidden at its end; each moved the banner and the results below it, a
    relayout and a repaint of the whole panel (2-6 ms of loop at every start and end). The
    line is now always there: a run's start, its running time and its end move nothing."""
    import asyncio

    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    async def scenario(win):
        panel = win.runs_panel

        async def places():
            await asyncio.sleep(0.15)
            QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)   # whatever is still posted, run
            return [(w.mapTo(panel, w.rect().topLeft()), w.size())
                    for w in (panel.in_flight, panel.banner, panel.table, panel.cancel_btn)]

        before = await places()
        rec, pool, victim = await _busy_warm_worker(win)
        await wait_until(lambda: f"Run #{rec.id}" in panel.in_flight.text(), 5)
        during, flight = await places(), panel.in_flight.text()
        panel.cancel_btn.click()
        await wait_until(lambda: not rec.running and not panel.in_flight.text(), 20)
        await wait_until(lambda: f"#{rec.id}" in panel.banner.text(), 5)   # its outcome, said
        return before, during, await places(), flight

    rc, out, errors = run_window(scenario)
    assert rc == 0 and errors == []
    before, during, after, flight = out
    assert "running" in flight and "Esc" in flight
    assert during == before and after == before


def test_esc_cancels_a_worker_run_in_flight_and_is_free_otherwise(qtbot):
    """Esc stops the run in flight, except while a layer over the window (the shortcut list)
    holds the focus: that Esc closes the layer; with nothing in flight Esc is not taken.

    The warm pool is up first (the start-up measurement started it): Esc stops the cold
    worker of the run, never the pool's. (The check was once "no worker alive at all", which
    failed whenever the start-up measurement had started the pool by then.)"""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    def esc():
        QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Escape)

    def cold_pids() -> list[int]:
        return [w.pid for w in worker_processes() if w.kind == "cold"]

    async def scenario(win):
        await chart_focused(win)
        rec = await cold_run_in_flight(win)
        cold = cold_pids()
        win.talk.toggle_overlay()                  # F1: the shortcut list over the window
        await wait_until(lambda: win.talk.overlay.isVisible(), 5)
        esc()                                      # closes the list, not the run
        await wait_until(lambda: not win.talk.overlay.isVisible(), 5)
        still_running = rec.running
        await wait_until(lambda: QApplication.focusWidget() is win.chart, 5)
        esc()                                      # now: the run
        await wait_until(lambda: not rec.running, 20)
        await wait_until(lambda: not win.runs_panel.cancel_btn.isEnabled(), 10)
        idle_esc = win.runs_panel.esc_cancels
        return rec, still_running, idle_esc, cold, cold_pids(), warm_pool().pids()

    rc, (rec, still_running, idle_esc, cold, cold_after, warm), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert still_running
    assert rec.status == "cancelled"
    assert cold and cold_after == []   # the run's cold process was stopped ...
    assert all(gone(pid) for pid in cold)
    assert warm                        # ... and the warm pool was left alone
    assert not idle_esc                # with nothing in flight, Esc is left to the rest of the window


def test_a_hung_worker_run_times_out_and_says_so(qtbot):
    from lanemon.ui.runs.controller import WorkerTimeout

    async def scenario(win):
        c, panel = win.controller, win.runs_panel
        c.worker_timeout = WorkerTimeout(factor=0, floor_s=1.0)   # a fixed 1 s limit
        rec, pool, victim = await _busy_warm_worker(win)
        try:
            os.kill(victim, signal.SIGSTOP)
            await wait_until(lambda: not rec.running, 30)
            await wait_until(lambda: gone(victim) and len(pool.pids()) == pool.size, 20)
            await wait_until(lambda: f"Run #{rec.id}" in panel.banner.text(), 5)   # its outcome, said
            return rec, panel.banner.text()
        finally:
            release(victim)

    rc, (rec, banner), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert rec.status == "timed out" and rec.timeout_s == 1.0
    assert f"Run #{rec.id}" in banner and "timed out" in banner and "1.0 s" in banner
    assert "replacement" in banner


def test_a_worker_that_dies_mid_run_is_said_in_the_banner(qtbot):
    async def scenario(win):
        rec, pool, victim = await _busy_warm_worker(win)
        try:
            os.kill(victim, signal.SIGKILL)
            await wait_until(lambda: not rec.running, 20)
            await wait_until(lambda: f"Run #{rec.id}" in win.runs_panel.banner.text(), 5)   # its outcome, said
            return rec, victim, win.runs_panel.banner.text()
        finally:
            release(victim)

    rc, (rec, victim, banner), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert rec.status == "failed" and "WorkerDied" in rec.error
    assert f"Run #{rec.id}" in banner and "died" in banner and str(victim) in banner
    assert "replacement" in banner


def test_a_whole_run_that_finished_while_a_close_was_pending_is_recorded_done(qtbot):
    """Regression: the close came while the run waited for the tick after it (its work done):
    it was recorded "cancelled". The close is asked the moment the result is in, as a click
    queued during the block is handled right after it."""
    total = 300_000

    async def scenario(win):
        c = win.controller
        rec = c.start_whole(total)
        asked = []

        def close_once_the_work_is_done():
            if rec.result is not None and not asked:
                asked.append(True)
                win.close()

        c.changed.connect(close_once_the_work_is_done)
        await wait_until(lambda: not rec.running, 30)
        return rec, asked

    rc, (rec, asked), errors = run_window(scenario)
    assert rc == 0 and errors == [] and asked
    assert rec.status == "done"
    assert rec.result == hash_range(0, total) and rec.work_ms > 0
    assert rec.stats is not None


def test_the_job_size_is_limited_by_the_same_constant_as_the_command(qtbot):
    from lanemon.work.report import MAX_TOTAL

    async def scenario(win):
        c, panel = win.controller, win.runs_panel
        await wait_until(lambda: c.machine.rate_per_ms is not None, 30)
        panel.set_job(10 * MAX_TOTAL, "iterations")
        clamped = panel.job_total()
        ms = 2 * MAX_TOTAL / c.machine.rate_per_ms              # twice the limit, in CPU ms
        panel.set_job(round(ms), "CPU ms")
        n = len(c.records)
        panel.run_worker()
        return clamped, len(c.records) - n, panel.banner.text()

    rc, (clamped, started, banner), errors = run_window(scenario)
    assert rc == 0 and errors == []
    assert clamped == MAX_TOTAL
    assert started == 0 and "too big" in banner and f"{MAX_TOTAL:,}" in banner


SCENARIO_DRIVER = """
import asyncio, os, signal
from lanemon.ui.tools.testing import headless, run_window, activated

headless()
cleaned = []

async def scenario(win):
    await activated(win)
    assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)   # the window's door is up
    try:
        os.kill(os.getpid(), signal.SIGTERM)    # as `kill` from outside, mid-scenario
        await asyncio.sleep(60)                 # (a bench segment, agents running)
    finally:
        cleaned.append(True)                    # (the agents stopped)

try:
    run_window(scenario)
    print("returned")
except RuntimeError as exc:
    print("raised:", exc)
print("cleaned" if cleaned else "not cleaned", flush=True)
"""


def test_a_window_closed_by_a_signal_ends_its_scenario_with_its_clean_up(tmp_path):
    """``run_window`` (the benches' and tests' driver) awaited the scenario after the window
    had gone: a SIGTERM closed the window (the signal door), the scenario went on with its
    agents, and a second SIGTERM killed the process with them. Now the scenario is cancelled
    (its ``finally`` runs) and run_window says the window ended first."""
    import subprocess
    import sys

    script = tmp_path / "driver.py"
    script.write_text(SCENARIO_DRIVER)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=root,
                          timeout=90)
    lines = done.stdout.splitlines()
    assert lines == ["raised: the window ended (exit 143) before the scenario did", "cleaned"], done.stderr


def test_a_view_that_fails_to_shut_down_does_not_keep_the_rest_from_it(qtbot):
    """The window shut its views down one after another: one that raised (a store gone away)
    skipped the rest and the shutdown hooks, the agents' among them. Every step runs now;
    the error still comes out at the end."""
    import asyncio

    from lanemon.ui.shell.main_window import MainWindow

    win = MainWindow()
    qtbot.addWidget(win)
    ran = []

    async def broken():
        raise RuntimeError("the store went away")

    keys = list(win.views)
    win.views[keys[0]].shutdown = broken            # the first view fails
    last = win.views[keys[-1]]
    shut_last = last.shutdown

    async def last_view():
        ran.append("last view")
        await shut_last()

    async def hook():
        ran.append("hook")

    last.shutdown = last_view
    win.add_shutdown_hook(hook)

    async def go():
        with pytest.raises(RuntimeError, match="the store went away"):
            await win.shutdown()

    import qasync

    from lanemon.ui.shell.app import application

    with asyncio.Runner(loop_factory=lambda: qasync.QEventLoop(application())) as r:
        r.run(go())
    assert ran == ["last view", "hook"]


def test_a_window_whose_set_up_fails_is_still_shut_down(monkeypatch, qtbot):
    """``app.main`` set the window up (settings, show, worker measurement, probe listener)
    before its ``try``: a failure there left the signal door's handlers installed and the
    window never shut down (its views, its shutdown hooks: the agents and store it started).
    Now everything after the door is inside the ``try`` whose ``finally`` shuts down."""
    import asyncio

    from lanemon.ui.shell import settings
    from lanemon.ui.shell.main_window import MainWindow

    def broken(win, store):
        raise RuntimeError("settings broke")

    monkeypatch.setattr(settings, "restore", broken)
    handler = signal.getsignal(signal.SIGTERM)
    win = MainWindow()
    hooks = []

    async def hook():
        hooks.append(True)

    win.add_shutdown_hook(hook)
    with pytest.raises(RuntimeError, match="settings broke"):
        run_window(lambda w: asyncio.sleep(30), window=win)
    assert hooks == [True]                          # the window's shutdown ran
    assert signal.getsignal(signal.SIGTERM) is handler   # the door was closed
    assert not win.isVisible()
