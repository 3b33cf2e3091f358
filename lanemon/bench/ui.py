"""``lanemon bench ui``: the window's cost with every domain live, against floors measured alongside.

The full window runs offscreen on qasync (1280×800); its heartbeat is a
precise 10 ms Qt timer. Every figure is judged against a floor measured in
the same run, in short alternations (not one long block each), so that a
shared machine's slow drift falls on both alike:

1. idle (Runs tab shown, nothing live) alternating ``IDLE_ALTERNATIONS``
   times with the floor: a bare qasync loop in another process with the same
   heartbeat and no window (``lanemon.bench.floor``; the window's loop waits
   meanwhile). Each alternation also
   records the busy control (``lanemon.bench.lag``): the bare loop plus a
   30 fps timer busy for the idle frame's goal, printed beside, not judged.
   Then the chart's idle frame (CPU time of the GUI thread, paint included;
   median), in ``CHART_ALTERNATIONS`` segments alternating with its floor: the
   same rectangles repainted bare (``ScrollPlot.set_bare``: Qt's repaint and
   one image copy, no chart logic), printed beside; the goal is the whole
   frame's.
2. loaded: 1000 simulated jobs over 200 workspaces in both queues (5–9 s each:
   the lanes stay busy for the whole segment) and a counters simulation with
   64 counters and 16 staff at speed 1. For the Lanes & queues tab and then
   the Counters tab, ``SEGMENTS`` alternations of: the load started and the
   tab shown; the same load with the Runs tab (the view's own share); the
   load stopped (jobs cancelled, simulation stopped) and the Runs tab: the
   loaded figure's own alternating idle.
3. the refresh cost per frame (CPU time of the GUI thread, so that a busy
   neighbour on a shared machine does not count), as the window runs under
   the load (``RECORD_S`` seconds): every tick of the chart's and the shown
   view's frame timers, each timed with the paint it caused; per frame: all
   of it over the frames that passed (30 a second); per tick: median, p95,
   max. As worst cases, ``FRAMES`` times everything at once (chart + a fresh
   snapshot shown in full + paint), and the same with the whole window
   repainted.

Goals: idle p99 within +0.3 ms of the bare loop; loaded p99 within +1 ms of
the alternating idle (each tab); refresh ≤ 3 ms per frame; the idle chart
frame ≤ 0.5 ms (median).
"""

from __future__ import annotations

import asyncio
import gc
import random
import statistics
import time
from contextlib import ExitStack, contextmanager

from lanemon.bench._common import load_text
from lanemon.bench._window import bare_loop, control_report, floor_segment, run_window, settled
from lanemon.bench.goals import Goal, alternate
from lanemon.lanes import SimulatedWork
from lanemon.stats import percentile

RECORD_S = 4.0
CHART_ALTERNATIONS = 4  # the idle chart frame / its bare repaint, in turn
IDLE_ALTERNATIONS = 4  # idle / bare-loop floor alternations (before the load)
SEGMENTS = 4          # loaded shown / loaded hidden / idle alternations per view
SEGMENT_S = 1.5
SETTLE_S = 0.3
FRAMES = 40
JOBS = 1000
JOB_S = (5.0, 9.0)       # simulated duration of each job: the lanes stay busy throughout
WORKSPACES = 200
IDLE_GOAL_MS = 0.3       # idle p99 over the bare loop's
LOADED_GOAL_MS = 1.0     # loaded p99 over the alternating idle's
FRAME_GOAL_MS = 3.0      # refresh per frame under load
CHART_IDLE_GOAL_MS = 0.5  # the chart's idle frame, median


async def _lags(window, seconds: float) -> list[float]:
    await asyncio.sleep(SETTLE_S)            # a switch's own repaint, a resume's catch-up: not counted
    t0 = time.perf_counter()
    await asyncio.sleep(seconds)
    return window.heartbeat.in_range(t0, time.perf_counter(), one_after=False).tolist()


class _Load:
    """The bench's load, started and stopped for each loaded segment: ``JOBS`` simulated
    jobs over ``WORKSPACES`` workspaces in both queues, and the counters simulation."""

    def __init__(self, window) -> None:
        self._lanes, self._counters = window.views["lanes"], window.views["counters"]
        self._rng = random.Random(7)
        self._ids: list[int] = []
        form = self._counters.form
        form.counters.setValue(64)
        form.staff.setValue(16)
        form.customers.setValue(0)   # endless
        form.speed.setValue(1.0)

    async def start(self) -> None:
        sched = self._lanes.scheduler
        for i in range(JOBS):
            queue = "reservations" if (i // WORKSPACES) % 2 == 0 else "cafe"
            self._ids.append(await sched.submit(queue, f"ws-{i % WORKSPACES:03d}",
                                                SimulatedWork(self._rng.uniform(*JOB_S))))
        if not self._counters.start():
            raise RuntimeError("the counters simulation did not start")

    async def stop(self) -> None:
        from lanemon.ui.tools.testing import wait_until

        self._counters.stop()
        sched = self._lanes.scheduler
        for job_id in reversed(self._ids):      # the queued ones first: none starts meanwhile
            await sched.cancel(job_id)
        self._ids.clear()
        await wait_until(lambda: sched.jobs_finished == sched.jobs_submitted, 60, step_s=0.05)
        # what the load left for the collector is collected now, not in the idle segment after it
        gc.collect()


async def _loaded_alternations(window, key: str, load: _Load):
    """``SEGMENTS`` alternations of: load started, ``key``'s tab shown; the same load,
    Runs tab (the view's own share); load stopped, Runs tab (the alternating idle).
    Returns three lists of segments' lags: shown, hidden, idle."""
    shown, hidden, idle = [], [], []
    for _ in range(SEGMENTS):
        await load.start()
        window.show_view(key)
        shown.append(await _lags(window, SEGMENT_S))
        window.show_view("runs")
        hidden.append(await _lags(window, SEGMENT_S))
        await load.stop()
        idle.append(await _lags(window, SEGMENT_S))
    return shown, hidden, idle


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


class _Frames:
    """Frame ticks timed as they run, each cost appended to ``costs``: CPU time of the GUI
    thread in ms, the paint it caused included (``_paint_pending``), then ``then()`` if
    given (not timed). A frame done in turns of the loop (``kit.turns``: the chart's) is
    one cost, its steps' summed (the paint each step caused included)."""

    def __init__(self, costs: list[float], then=None) -> None:
        self._costs = costs
        self._then = then
        self._spent = 0.0                  # the steps of the frame under way so far, s
        self._inside = False               # a step is being timed

    def step(self, slot, turns=None) -> None:
        """``slot`` timed, as a frame's last part unless ``turns`` (a ``kit.turns.Turns``)
        has steps of it left after it. (A step run inside another, a tick finishing the
        last one's step first, is part of the outer one's time.)"""
        if self._inside:
            slot()
            return
        self._inside = True
        t0 = time.thread_time()
        try:
            slot()
            _paint_pending()
        finally:
            self._inside = False
        self._spent += time.thread_time() - t0
        if turns is None or not turns.pending:
            self._costs.append(self._spent * 1000.0)
            self._spent = 0.0
            if self._then is not None:
                self._then()

    def tick(self, slot, turns=None):
        """``slot`` as a frame tick, timed with the steps it leaves to ``turns`` if given
        (``turns(turns)`` must time those: a live view's tick and its step)."""
        return lambda: self.step(slot, turns)

    @contextmanager
    def turns(self, turns):
        """Every run of ``turns`` (a ``kit.turns.Turns``) in the block timed as one frame, or
        as the rest of the tick that started it (``tick``); one under way at the block's end
        is finished then, at once, and counted."""
        from lanemon.ui.kit.turns import call_step

        turns.call = lambda step: self.step(step, turns)
        try:
            yield
        finally:
            try:
                turns.finish()
            finally:
                turns.call = call_step


@contextmanager
def _slot_swapped(timer, slot, wrapper):
    """``timer`` calls ``wrapper`` instead of ``slot`` in the block."""
    timer.timeout.disconnect(slot)
    timer.timeout.connect(wrapper)
    try:
        yield
    finally:
        timer.timeout.disconnect(wrapper)
        timer.timeout.connect(slot)


async def _frames_as_they_run(window, key: str | None, seconds: float) -> dict[str, list[float]]:
    """The window's own frame work for ``seconds``, as it runs: every frame of the chart (its
    turns together) and every tick of the shown view's frame timer (with its step, in the
    turn after it), each timed with the paint it caused.

    Every view is a ``LiveView``: its ``frame_timer`` calls its ``frame``; ``key=None``:
    the chart's alone. Returns each one's frame costs in ms, sorted: ``{"chart": [...], key: [...]}``."""
    ticks: dict[str, list[float]] = {"chart": []}
    with ExitStack() as timing:
        timing.enter_context(_Frames(ticks["chart"]).turns(window.chart.turns))
        if key is not None:
            view = window.views[key]
            ticks[key] = []
            timed = _Frames(ticks[key])
            timing.enter_context(_slot_swapped(view.frame_timer, view.frame, timed.tick(view.frame, view.turns)))
            timing.enter_context(timed.turns(view.turns))
        await asyncio.sleep(seconds)
    return {name: sorted(costs) for name, costs in ticks.items()}


async def _chart_idle_and_bare(window, alternations: int, seconds: float) -> tuple[list[float], list[float]]:
    """The chart's idle frame as it runs, and its floor measured alongside: the same
    repaints, bare.

    ``alternations`` times: ``seconds`` of the chart's frames as they run, each timed with
    the paint it caused (its turns together, as ``_frames_as_they_run``), then ``seconds``
    of bare frames: each tick of the same timer asks the plot area to repaint the
    rectangles one of the chart's frames just asked for (in turn), and the area's paint
    only copies its picture (``ScrollPlot.set_bare``), with no chart logic. A bare frame is
    what Qt itself takes, on this machine now, to repaint what an idle frame repaints.
    Returns both lists of costs in ms, sorted."""
    chart = window.chart
    area, timer = chart.area, chart.frame_timer
    frames: list[float] = []
    bare: list[float] = []
    asked: list[list] = []

    def ask_again() -> None:
        for r in asked[len(bare) % len(asked)] if asked else ():
            area.update(r)

    timed = _Frames(frames, lambda: asked.append(area.update_region or []))
    for _ in range(alternations):
        await asyncio.sleep(SETTLE_S)          # (the chart's own frames: a resume's catch-up, not counted)
        with timed.turns(chart.turns):
            await asyncio.sleep(seconds)
        area.set_bare(True)
        try:
            with _slot_swapped(timer, chart.frame, _Frames(bare).tick(ask_again)):
                await asyncio.sleep(seconds)
        finally:
            area.set_bare(False)               # (all repainted once, before the next settling)
    return sorted(frames), sorted(bare)


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

        await settled(window)
        window.show_view("runs")
        await asyncio.sleep(0.5)
        idle, floor, control = [], [], []
        with bare_loop(window, SETTLE_S) as bare, bare_loop(window, SETTLE_S, CHART_IDLE_GOAL_MS) as busy:
            for _ in range(IDLE_ALTERNATIONS):
                idle.append(await _lags(window, SEGMENT_S))
                floor.append(floor_segment(window, bare, SEGMENT_S))   # the window waits meanwhile
                control.append(floor_segment(window, busy, SEGMENT_S))
        chart_idle, bare_idle = await _chart_idle_and_bare(window, CHART_ALTERNATIONS, RECORD_S / CHART_ALTERNATIONS)

        load = _Load(window)
        results = {}
        for key in ("lanes", "counters"):
            shown, hidden, own_idle = await _loaded_alternations(window, key, load)
            await load.start()
            window.show_view(key)
            await asyncio.sleep(SETTLE_S)
            live = window.views["lanes"].scheduler.snapshot(limit=0).counts
            ticks = await _frames_as_they_run(window, key, RECORD_S)
            at_once = await _all_at_once(window, key, whole_window=False)
            worst = await _all_at_once(window, key, whole_window=True)
            await load.stop()
            window.show_view("runs")
            results[key] = (shown, hidden, own_idle, ticks, at_once, worst, live)
        return idle, floor, control, (chart_idle, bare_idle), results

    load_before = load_text()
    idle, floor, control, (chart_idle, bare_idle), results = run_window(scenario)
    idle_vs_floor = alternate(list(zip(idle, floor)))
    control_line, control_figures = control_report(alternate(list(zip(control, floor))), CHART_IDLE_GOAL_MS)
    i, f = idle_vs_floor.figure, idle_vs_floor.floor
    out(f"full window offscreen, 1280x800, qasync; heartbeat 10 ms precise Qt timer; segments of {SEGMENT_S:g} s "
        f"after {SETTLE_S:g} s settling; load: {JOBS} simulated jobs ({JOB_S[0]:g}-{JOB_S[1]:g} s) over "
        f"{WORKSPACES} workspaces in both queues + 64 counters, 16 staff")
    out(f"{load_before} before, {load_text()} after")
    out(f"floor (bare qasync loop, same heartbeat, no window; {IDLE_ALTERNATIONS} segments alternating with idle):"
        f" p50 {f.p50:5.2f} ms  p99 {f.p99:5.2f} ms  max {f.max:6.2f} ms")
    out(f"idle (Runs tab, nothing live):  p50 {i.p50:5.2f} ms  p99 {i.p99:5.2f} ms  max {i.max:6.2f} ms"
        f"   p99 {idle_vs_floor.over:+.2f} ms over the floor; each alternation: {idle_vs_floor.differences_text()} ms")
    out(control_line)
    chart_median = statistics.median(chart_idle) if chart_idle else float("nan")
    bare_median = statistics.median(bare_idle) if bare_idle else float("nan")
    out(f"chart frame, idle (as it runs, {RECORD_S:g} s in {CHART_ALTERNATIONS} segments, paint included): "
        f"{len(chart_idle)} ticks, median {chart_median:5.2f} ms, "
        f"p95 {percentile(chart_idle, 95) if chart_idle else float('nan'):5.2f} ms")
    out(f"  its floor, alternating: the same rectangles repainted bare (Qt's repaint and one image copy, "
        f"no chart logic): {len(bare_idle)} ticks, median {bare_median:5.2f} ms; the chart's own part "
        f"{chart_median - bare_median:+.2f} ms (not judged: the goal is the whole frame's)")
    goals = [idle_vs_floor.goal("window idle heartbeat p99 vs bare loop", IDLE_GOAL_MS),
             Goal("idle chart frame (median)", chart_median, CHART_IDLE_GOAL_MS)]
    figures = {"load": load_before, "floor": f.as_dict(3),
               "idle": dict(i.as_dict(3), p99OverFloorMs=round(idle_vs_floor.over, 3),
                            alternations=[round(d, 3) for d in idle_vs_floor.differences]),
               "control": control_figures,
               "chartIdleFrameMs": {"ticks": len(chart_idle), "median": round(chart_median, 3),
                                    "bareRepaintMedian": round(bare_median, 3),
                                    "overBareRepaint": round(chart_median - bare_median, 3)},
               "loaded": {}, "loadedViewsHidden": {}, "frameMs": {}}
    frames = RECORD_S * 30
    for key, (shown, hidden, own_idle, ticks, at_once, worst, live) in results.items():
        vs_idle = alternate(list(zip(shown, own_idle)))
        share = alternate(list(zip(shown, hidden)))
        lag, hid, idl = vs_idle.figure, share.floor, vs_idle.floor
        out(f"loaded, {key + ' tab shown:':<19} p50 {lag.p50:5.2f} ms  p99 {lag.p99:5.2f} ms  max {lag.max:6.2f} ms"
            f"   p99 {vs_idle.over:+.2f} ms over its alternating idle (p99 {idl.p99:.2f} ms); each alternation: "
            f"{vs_idle.differences_text()} ms")
        out(f"  same load, Runs tab:      p50 {hid.p50:5.2f} ms  p99 {hid.p99:5.2f} ms  max {hid.max:6.2f} ms"
            f"   (the domains' own work; the view's own share of p99 {share.over:+.2f} ms)")
        figures["loadedViewsHidden"][key] = dict(hid.as_dict(3), viewShareOfP99Ms=round(share.over, 3))
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
        out(f"  jobs live while the frames were timed: {live.jobs_submitted - live.jobs_finished} "
            f"of {live.jobs_submitted} submitted")
        figures["loaded"][key] = dict(lag.as_dict(3), idleP99=round(idl.p99, 3), p99OverIdleMs=round(vs_idle.over, 3),
                                      alternations=[round(d, 3) for d in vs_idle.differences])
        figures["frameMs"][key] = {"perFrame": round(per_frame, 3), "ticks": tick_figures,
                                   "allAtOnceMedian": round(statistics.median(at_once), 3),
                                   "wholeWindowMedian": round(statistics.median(worst), 3)}
        goals.append(vs_idle.goal(f"loaded p99, {key} tab, vs alternating idle", LOADED_GOAL_MS))
        goals.append(Goal(f"refresh per frame, {key} tab", per_frame, FRAME_GOAL_MS))
    for g in goals:
        out(g.line())
    figures["goals"] = [g.as_dict() for g in goals]
    figures["goalMet"] = all(g.met for g in goals)
    return figures
