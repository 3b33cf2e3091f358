"""``lanemon bench stalls``: the loop time the window takes from itself.

The full window runs offscreen on qasync (1280×800), its start-up measurements
done. Two figures, each with the goal beside it and measured in this run:

1. a tab's first show: ``show_view(key)`` for each tab not yet shown
   (Placement, Lanes & queues, Counters), timed from the call until the paint
   it caused is done (``ui._paint_pending``: posted scene updates, layout, the
   window's paint), wall clock: the time the loop could not run a tick;
2. the presenter toggle (F5): ``TOGGLES`` toggles, on and off alternately,
   ``GAP_S`` apart. A toggle is two turns of the loop (``lanemon.ui.kit.paint_hold``):
   the change (the call and the posted events it caused, timed like a first show,
   its paint held back), then, after the timers already due (the heartbeat's tick),
   the release: layout and one paint (``paint_hold.release_costs_ms``). The figure
   judged is the longer of the two, the longest the loop could not run a tick;
   their sum (the toggle's whole work) is printed beside it.

Beside each: the heartbeat's longest lag in the ``WATCH_S`` after the call
(what the chart shows for it). Goal: each under ``GOAL_MS`` of loop time.
"""

from __future__ import annotations

import asyncio
import statistics
import time

from lanemon.bench._common import goal
from lanemon.bench._window import run_window, settled
from lanemon.bench.goals import Goal
from lanemon.bench.ui import _paint_pending

GOAL_MS = 50.0
TOGGLES = 8
GAP_S = 0.4
WATCH_S = 0.3
TABS = ("placement", "lanes", "counters")


async def _timed(window, act) -> tuple[float, float]:
    """(ms from ``act()`` until its paint is done, the heartbeat's longest lag in ``WATCH_S``)."""
    t0 = time.perf_counter()
    act()
    _paint_pending()
    took = (time.perf_counter() - t0) * 1000.0
    await asyncio.sleep(WATCH_S)
    lags = window.heartbeat.in_range(t0, time.perf_counter(), one_after=False)
    return took, float(lags.max()) if lags.size else 0.0


async def toggle_turns(window, watch_s: float = WATCH_S) -> tuple[float, float, float]:
    """(ms of the change's turn, ms of its release's turn -- layout and paint --, the
    heartbeat's longest lag from the call until ``watch_s`` after the paint) of one
    presenter toggle."""
    from lanemon.ui.kit.paint_hold import held, release_costs_ms
    from lanemon.ui.tools.testing import wait_until

    releases = len(release_costs_ms)
    t0 = time.perf_counter()
    window.talk.toggle_presenter()
    _paint_pending()                    # the posted events the change caused: same turn
    change = (time.perf_counter() - t0) * 1000.0
    await wait_until(lambda: not held(window), 5.0, step_s=0.001)
    await asyncio.sleep(watch_s)
    release = release_costs_ms[-1] if len(release_costs_ms) > releases else 0.0
    lags = window.heartbeat.in_range(t0, time.perf_counter(), one_after=False)
    return change, release, float(lags.max()) if lags.size else 0.0


def run(out) -> dict:
    async def scenario(window):
        await settled(window)
        window.show_view("runs")
        await asyncio.sleep(0.5)
        first = {}
        for key in TABS:
            first[key] = await _timed(window, lambda key=key: window.show_view(key))
            await asyncio.sleep(GAP_S)
        window.show_view("runs")
        await asyncio.sleep(GAP_S)
        toggles = []
        for _ in range(TOGGLES):
            toggles.append(await toggle_turns(window))
            await asyncio.sleep(GAP_S)
        return first, toggles

    first, toggles = run_window(scenario)
    out(f"full window offscreen, 1280x800, qasync; a first show: the call until its paint is done "
        f"(wall clock); a toggle: the longer of its two loop turns; beside each, the heartbeat's "
        f"longest lag in the {WATCH_S:g} s after it")
    ok = True
    goals = []
    figures = {"goalMs": GOAL_MS, "firstShowMs": {}, "presenterToggleMs": {}}
    for key, (took, lag) in first.items():
        out(f"first show of the {key + ' tab:':<16} {took:7.1f} ms   (heartbeat max lag {lag:7.1f} ms)"
            f"   goal < {GOAL_MS:g} ms -> {goal(took < GOAL_MS)}")
        figures["firstShowMs"][key] = {"loopMs": round(took, 1), "heartbeatMaxMs": round(lag, 1)}
        goals.append(Goal(f"first show of the {key} tab", took, GOAL_MS))
        ok &= took < GOAL_MS
    turns = [max(change, release) for change, release, _ in toggles]
    costs = sorted(turns)
    whole = sorted(change + release for change, release, _ in toggles)
    lags = sorted(lag for _, _, lag in toggles)
    on = [t for i, t in enumerate(turns) if i % 2 == 0]
    off = [t for i, t in enumerate(turns) if i % 2 == 1]
    changes = sorted(c for c, _, _ in toggles)
    releases = sorted(r for _, r, _ in toggles)
    out(f"presenter toggle (F5), {TOGGLES} toggles, each two loop turns (the change, then its "
        f"layout and paint): longest turn median {statistics.median(costs):6.1f} ms, max "
        f"{costs[-1]:6.1f} ms (on: median {statistics.median(on):.1f}, off: median "
        f"{statistics.median(off):.1f} ms; change median {statistics.median(changes):.1f}, paint "
        f"median {statistics.median(releases):.1f}; both together median {statistics.median(whole):.1f}, "
        f"max {whole[-1]:.1f} ms; heartbeat max lag median {statistics.median(lags):.1f} ms)"
        f"   goal < {GOAL_MS:g} ms -> {goal(costs[-1] < GOAL_MS)}")
    figures["presenterToggleMs"] = {"median": round(statistics.median(costs), 1), "max": round(costs[-1], 1),
                                    "onMedian": round(statistics.median(on), 1),
                                    "offMedian": round(statistics.median(off), 1),
                                    "changeMedian": round(statistics.median(changes), 1),
                                    "paintMedian": round(statistics.median(releases), 1),
                                    "wholeMedian": round(statistics.median(whole), 1),
                                    "wholeMax": round(whole[-1], 1),
                                    "heartbeatMaxMedian": round(statistics.median(lags), 1)}
    ok &= costs[-1] < GOAL_MS
    goals.append(Goal(f"presenter toggle (F5), longest loop turn, slowest of {TOGGLES}", costs[-1], GOAL_MS))
    figures["goals"] = [g.as_dict() for g in goals]
    figures["goalMet"] = ok
    return figures
