"""``lanemon bench ui``: the window's cost with every domain live.

The full window runs offscreen on qasync (1280×800). Figures:

1. the heartbeat (precise 10 ms Qt timer) idle (Runs tab shown, nothing
   live): ``RECORD_S`` seconds before the load and as long after it, together;
2. the same with 1000 simulated jobs over 200 workspaces in both queues
   (5–9 s each, five per workspace: the lanes stay busy for the whole
   bench) and a counters simulation with 64 counters and 16 staff at speed
   1, with the Lanes & queues tab and then the Counters tab shown (their
   normal 30 fps refresh runs meanwhile), each alternating with the Runs
   tab (the same load, no live view) in short segments, so that the view's
   own share is measured against the same load at the same time;
3. the refresh cost per frame (CPU time of the GUI thread, so that a busy
   neighbour on a shared machine does not count), as the window runs
   (``RECORD_S`` seconds): every tick of the chart's and the shown view's
   frame timers, each timed with the paint it caused; per frame: all of it
   over the frames that passed (30 a second); per tick: median, p95, max.
   As worst cases, ``FRAMES`` times everything at once (chart + a fresh
   snapshot shown in full + paint), and the same with the whole window
   repainted.

Goals: loaded heartbeat p99 within 1 ms of idle; ≤ 4 ms per frame.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time

from lanemon.bench._common import goal
from lanemon.bench._window import run_window, settled
from lanemon.stats import percentile

RECORD_S = 4.0
SEGMENTS = 4          # shown / hidden alternations per view
SEGMENT_S = 1.5
SETTLE_S = 0.3
FRAMES = 40
JOBS = 1000
JOB_S = (5.0, 9.0)       # simulated duration of each job: the lanes stay busy throughout
WORKSPACES = 200


async def _lags(window, seconds: float):
    t0 = time.perf_counter()
    await asyncio.sleep(seconds)
    return window.heartbeat.in_range(t0, time.perf_counter(), one_after=False)


async def _shown_and_hidden(window, key: str):
    """The heartbeat with ``key``'s tab shown and with the Runs tab shown (the same domain
    load, no live view), in ``SEGMENTS`` alternating segments of ``SEGMENT_S`` seconds:
    a shared machine's slow drift falls on both alike. Returns (shown, hidden) stats."""
    import numpy as np

    from lanemon.ui.heartbeat.timer import lag_stats

    shown, hidden = [], []
    for _ in range(SEGMENTS):
        for tab, bucket in ((key, shown), ("runs", hidden)):
            window.show_view(tab)
            await asyncio.sleep(SETTLE_S)            # the switch's own repaint is not counted
            bucket.append(await _lags(window, SEGMENT_S))
    return lag_stats(np.concatenate(shown)), lag_stats(np.concatenate(hidden))


_POSTED = None


def _paint_pending() -> None:
    """The paints what ran so far has asked for, now: the graphics scenes' posted updates
    (``MetaCall``), layout, then the window's ``UpdateRequest``. No timers or sockets run
    here (``processEvents`` would re-enter qasync's loop); without the bench these posted
    events run right after the tick, in the same turn of the loop."""
    global _POSTED
    if _POSTED is None:      # imported on first use (the offscreen platform is chosen before Qt loads);
        from PySide6.QtCore import QEvent  # not on every call: an import costs ~10 us inside a frame
        from PySide6.QtWidgets import QApplication

        _POSTED = (QApplication.sendPostedEvents,
                   (QEvent.Type.MetaCall, QEvent.Type.LayoutRequest, QEvent.Type.UpdateRequest))
    send, kinds = _POSTED
    for kind in kinds:
        send(None, kind)


async def _frames_as_they_run(window, key: str, seconds: float) -> dict[str, list[float]]:
    """The window's own frame work for ``seconds``, as it runs: every tick of the chart's
    and the shown view's frame timers, each timed with the paint it caused.

    Every view is a ``LiveView``: its ``frame_timer`` calls its ``frame``.
    Returns each timer's tick costs in ms, sorted: ``{"chart": [...], key: [...]}``."""
    view = window.views[key]
    owners = {"chart": (window.chart.frame_timer, window.chart.redraw), key: (view.frame_timer, view.frame)}
    ticks: dict[str, list[float]] = {name: [] for name in owners}

    def timed(name, slot):
        def tick() -> None:
            t0 = time.thread_time()
            slot()
            _paint_pending()
            ticks[name].append((time.thread_time() - t0) * 1000.0)
        return tick

    swapped = []
    for name, (timer, slot) in owners.items():
        wrapper = timed(name, slot)
        timer.timeout.disconnect(slot)
        timer.timeout.connect(wrapper)
        swapped.append((timer, slot, wrapper))
    try:
        await asyncio.sleep(seconds)
    finally:
        for timer, slot, wrapper in swapped:
            timer.timeout.disconnect(wrapper)
            timer.timeout.connect(slot)
    return {name: sorted(costs) for name, costs in ticks.items()}


async def _all_at_once(window, key: str, whole_window: bool) -> list[float]:
    """``FRAMES`` times: chart redraw + the view's full refresh (a fresh snapshot, every
    step at once) + paint; ``whole_window=True`` repaints the whole window instead of
    what changed. The worst cases, for comparison."""
    view = window.views[key]
    costs = []
    for _ in range(FRAMES):
        await asyncio.sleep(1 / 30)
        _paint_pending()                       # start from a clean slate
        t0 = time.thread_time()
        window.chart.redraw()
        view.refresh_now()
        if whole_window:
            window.repaint()
        _paint_pending()
        costs.append((time.thread_time() - t0) * 1000.0)
    return sorted(costs)


def run(out) -> dict:
    async def scenario(window):
        from lanemon.lanes import SimulatedWork

        await settled(window)
        window.show_view("runs")
        await asyncio.sleep(0.5)
        idle_before = await _lags(window, RECORD_S)

        lanes, counters = window.views["lanes"], window.views["counters"]
        rng = random.Random(7)
        sched = lanes.scheduler
        for i in range(JOBS):
            queue = "reservations" if (i // WORKSPACES) % 2 == 0 else "cafe"
            await sched.submit(queue, f"ws-{i % WORKSPACES:03d}", SimulatedWork(rng.uniform(*JOB_S)))
        form = counters.form
        form.counters.setValue(64)
        form.staff.setValue(16)
        form.customers.setValue(0)   # endless
        form.speed.setValue(1.0)
        if not counters.start():
            raise RuntimeError("the counters simulation did not start")

        results = {}
        await asyncio.sleep(0.5)
        for key in ("lanes", "counters"):
            lag, hidden = await _shown_and_hidden(window, key)
            window.show_view(key)
            await asyncio.sleep(SETTLE_S)
            ticks = await _frames_as_they_run(window, key, RECORD_S)
            at_once = await _all_at_once(window, key, whole_window=False)
            worst = await _all_at_once(window, key, whole_window=True)
            results[key] = (lag, hidden, ticks, at_once, worst)
        live = sched.snapshot(limit=0).counts
        # idle again once everything has stopped: the idle figure is both recordings together,
        # so one slow moment of a shared machine weighs half as much
        counters.stop()
        window.show_view("runs")
        from lanemon.ui.tools.testing import wait_until
        await wait_until(lambda: sched.jobs_finished == JOBS, 60, step_s=0.2)
        await asyncio.sleep(0.5)
        idle_after = await _lags(window, RECORD_S)
        return idle_before, idle_after, results, live

    import numpy as np

    from lanemon.ui.heartbeat.timer import lag_stats

    before, after, results, counts = run_window(scenario)
    idle = lag_stats(np.concatenate([before, after]))
    idle_b, idle_a = lag_stats(before), lag_stats(after)
    out(f"full window offscreen, 1280x800, qasync; heartbeat 10 ms precise Qt timer, {RECORD_S:g} s per figure; "
        f"load: {JOBS} simulated jobs ({JOB_S[0]:g}-{JOB_S[1]:g} s) over {WORKSPACES} workspaces "
        "in both queues + 64 counters, 16 staff")
    out(f"idle (Runs tab):            p50 {idle.p50:6.2f} ms  p99 {idle.p99:6.2f} ms  max {idle.max:6.2f} ms"
        f"   (nothing live; {RECORD_S:g} s before the load and {RECORD_S:g} s after it: "
        f"p99 {idle_b.p99:.2f} / {idle_a.p99:.2f} ms)")
    figures = {"idle": dict(idle.as_dict(3), p99Before=round(idle_b.p99, 3), p99After=round(idle_a.p99, 3)),
               "loaded": {}, "loadedViewsHidden": {}, "frameMs": {}}
    ok_lag = ok_frame = True
    frames = RECORD_S * 30
    for key, (lag, hidden, ticks, at_once, worst) in results.items():
        out(f"loaded, {key + ' tab shown:':<19} p50 {lag.p50:6.2f} ms  p99 {lag.p99:6.2f} ms  max {lag.max:6.2f} ms"
            f"   (p99 {lag.p99 - idle.p99:+.2f} ms over idle)")
        out(f"  same load, Runs tab:      p50 {hidden.p50:6.2f} ms  p99 {hidden.p99:6.2f} ms  max {hidden.max:6.2f} ms"
            f"   (the domains' own work; {SEGMENTS} x {SEGMENT_S:g} s each, alternating with the line above:"
            f" the view's own share of p99 {lag.p99 - hidden.p99:+.2f} ms)")
        figures["loadedViewsHidden"][key] = dict(hidden.as_dict(3), viewShareOfP99Ms=round(lag.p99 - hidden.p99, 3))
        per_frame = sum(map(sum, ticks.values())) / frames
        out(f"  refresh per frame ({key}, as it runs): {per_frame:5.2f} ms "
            f"(all the chart's and the view's tick work over {RECORD_S:g} s / {frames:g} frames, paints included)")
        tick_figures = {}
        for name, costs in ticks.items():
            if not costs:
                continue
            tick_figures[name] = {"ticks": len(costs), "median": round(statistics.median(costs), 3),
                                  "p95": round(percentile(costs, 95), 3), "max": round(costs[-1], 3)}
            out(f"    {name + ' ticks:':<16} {len(costs):4d}, median {statistics.median(costs):5.2f} ms, "
                f"p95 {percentile(costs, 95):5.2f} ms, max {costs[-1]:5.2f} ms")
        out(f"  everything at once ({key}: chart + fresh snapshot shown in full + paint): "
            f"median {statistics.median(at_once):5.2f} ms; whole window repainted: "
            f"median {statistics.median(worst):5.2f} ms (worst cases)")
        figures["loaded"][key] = dict(lag.as_dict(3), p99OverIdleMs=round(lag.p99 - idle.p99, 3))
        figures["frameMs"][key] = {"perFrame": round(per_frame, 3), "ticks": tick_figures,
                                   "allAtOnceMedian": round(statistics.median(at_once), 3),
                                   "wholeWindowMedian": round(statistics.median(worst), 3)}
        ok_lag &= lag.p99 - idle.p99 <= 1.0
        ok_frame &= per_frame <= 4.0
    out(f"jobs submitted {counts.jobs_submitted}, finished when the last view was measured "
        f"{counts.jobs_finished}")
    out(f"goal: loaded p99 within 1 ms of idle -> {goal(ok_lag)}; refresh <= 4 ms per frame -> {goal(ok_frame)}")
    figures["goalMet"] = ok_lag and ok_frame
    return figures
