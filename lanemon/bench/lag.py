"""``lanemon bench lag``: the window's heartbeat against a bare loop's, measured alongside.

The real window (offscreen platform, 1280×800, chart redrawing at 30 fps,
every view present) runs on qasync. After its start-up measurements,
``ALTERNATIONS`` rounds each take three short segments in turn:

1. the window idle: its heartbeat (a precise 10 ms Qt timer) for ``SEGMENT_S``;
2. the floor: a bare qasync loop in another process with the same heartbeat
   and no window (``lanemon.bench.floor``), for ``SEGMENT_S``, while the
   window's loop waits (it draws nothing and takes no CPU meanwhile);
3. a warm worker run of ~``JOB_MS`` ms and the window's heartbeat during it.

Each alternation also records a control, no window in it: the bare loop plus
one 30 fps precise timer that busy-waits ``CONTROL_BUSY_MS`` (the idle chart
frame's goal, ``bench ui``) and draws nothing (``BareLoop(busy_ms=...)``). Its
p99 over the floor is what a frame of that length costs this heartbeat by
itself: a tick due while a slot runs waits for its end (``lanemon.bench.floor``).
It is printed beside the goal, not judged.

Short alternations, not one long block each: a shared machine's slow drift
falls on all three alike. Figures: the window's idle p99 minus the floor's
p99 (all segments pooled), the warm runs' p99 minus the alternating idle's,
each alternation's own difference and how many were within the goal, and the
load average. Goals: idle p99 within +0.3 ms of the floor; warm-run p99
within +1 ms of the alternating idle.
"""

from __future__ import annotations

import asyncio
import time

from lanemon.bench._common import load_text
from lanemon.bench._window import bare_loop, control_report, floor_segment, run_window, settled
from lanemon.bench.goals import alternate
from lanemon.bench.ui import CHART_IDLE_GOAL_MS

ALTERNATIONS = 6
SEGMENT_S = 1.5
SETTLE_S = 0.3
JOB_MS = 1500.0          # ~150 heartbeat ticks per run, ~900 over the alternations
IDLE_GOAL_MS = 0.3
WARM_GOAL_MS = 1.0
CONTROL_BUSY_MS = CHART_IDLE_GOAL_MS   # the control's slot: an idle chart frame at its goal


def run(out) -> dict:
    async def scenario(window):
        from lanemon.ui.tools.testing import wait_until

        await settled(window)
        hb = window.heartbeat
        total = window.controller.iterations_for_ms(JOB_MS)
        idle, floor, warm, control = [], [], [], []
        with bare_loop(window, SETTLE_S) as bare, bare_loop(window, SETTLE_S, CONTROL_BUSY_MS) as busy:
            for _ in range(ALTERNATIONS):
                await asyncio.sleep(SETTLE_S)
                t0 = time.perf_counter()
                await asyncio.sleep(SEGMENT_S)
                idle.append(hb.in_range(t0, time.perf_counter(), one_after=False).tolist())
                floor.append(floor_segment(window, bare, SEGMENT_S))   # the window waits meanwhile
                control.append(floor_segment(window, busy, SEGMENT_S))
                await asyncio.sleep(SETTLE_S)
                t0 = time.perf_counter()
                rec = window.controller.start_worker(total, "warm")
                if rec is None:
                    raise RuntimeError("the window refused the warm worker run")
                await wait_until(lambda rec=rec: rec.status != "running" and rec.stats is not None, 60)
                # the window's heartbeat from the click to the result (and the tick after it)
                warm.append(hb.in_range(t0, time.perf_counter()).tolist())
        return idle, floor, warm, control, hb.period_ms, total

    load_before = load_text()
    idle, floor, warm, control, period, total = run_window(scenario)
    idle_vs_floor = alternate(list(zip(idle, floor)))
    control_vs_floor = alternate(list(zip(control, floor)))
    out(f"full window offscreen on qasync; heartbeat: precise Qt timer, period {period} ms; "
        f"{ALTERNATIONS} alternations of: window idle {SEGMENT_S:g} s, bare qasync loop with the same "
        f"heartbeat and no window {SEGMENT_S:g} s (the window waiting), a warm worker run of "
        f"{total:,} iterations (~{JOB_MS:.0f} ms)")
    out(f"{load_before} before, {load_text()} after")
    f, i = idle_vs_floor.floor, idle_vs_floor.figure
    out(f"floor (bare loop): p50 {f.p50:6.2f} ms   p99 {f.p99:6.2f} ms   max {f.max:6.2f} ms   ({f.samples} ticks)")
    out(f"window idle:       p50 {i.p50:6.2f} ms   p99 {i.p99:6.2f} ms   max {i.max:6.2f} ms   ({i.samples} ticks)"
        f"   p99 {idle_vs_floor.over:+.2f} ms over the floor")
    out(f"  each alternation, idle p99 minus floor p99: {idle_vs_floor.differences_text()} ms")
    control_line, control_figures = control_report(control_vs_floor, CONTROL_BUSY_MS)
    out(control_line)
    warm_vs_idle = alternate(list(zip(warm, idle)))
    warm_pooled = warm_vs_idle.figure
    out(f"warm worker runs:  p50 {warm_pooled.p50:6.2f} ms   p99 {warm_pooled.p99:6.2f} ms   "
        f"max {warm_pooled.max:6.2f} ms   ({warm_pooled.samples} ticks)   p99 {warm_vs_idle.over:+.2f} ms over "
        f"the alternating idle")
    out(f"  each alternation, warm-run p99 minus idle p99: {warm_vs_idle.differences_text()} ms")
    goals = [idle_vs_floor.goal("window idle heartbeat p99 vs bare loop", IDLE_GOAL_MS),
             warm_vs_idle.goal("warm worker run p99 vs alternating idle", WARM_GOAL_MS)]
    for g in goals:
        out(g.line())
    return {
        "periodMs": period,
        "load": load_before,
        "floor": f.as_dict(3),
        "idle": dict(i.as_dict(3), p99OverFloorMs=round(idle_vs_floor.over, 3),
                     alternations=[round(d, 3) for d in idle_vs_floor.differences]),
        "warmRun": dict(warm_pooled.as_dict(3), p99OverIdleMs=round(warm_vs_idle.over, 3),
                        alternations=[round(d, 3) for d in warm_vs_idle.differences]),
        "warmP99OverIdleMs": round(warm_vs_idle.over, 3),
        "control": control_figures,
        "goals": [g.as_dict() for g in goals],
        "goalMet": all(g.met for g in goals),
    }
