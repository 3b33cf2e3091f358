"""``lanemon bench startup``: time from process start to the first painted window.

Starts the real ``lanemon`` command (``python -m lanemon``) with the
offscreen platform and ``LANEMON_FIRST_PAINT_EXIT=1``: the window prints the
wall-clock time of its first paint event, installs its other tabs (they come
after the first paint), prints that time too and closes itself. The figures
are those times minus the moment just before the process was started, and
the CPU time the process used from start to exit (``os.wait4``: what a busy
neighbour on a shared machine does not add); median of ``REPEAT`` starts
(the first one, which warms the file cache, is not counted).
Goal: first paint ≤ 1.2 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from lanemon.bench._common import load_text, median
from lanemon.bench.goals import Goal

REPEAT = 5
GOAL_MS = 1200.0


def _one_start() -> tuple[float, float, float]:
    """(first paint, every tab there, clean exit) in ms from the start."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", LANEMON_FIRST_PAINT_EXIT="1", LANEMON_NO_SETTINGS="1")
    t0 = time.time()
    proc = subprocess.Popen([sys.executable, "-m", "lanemon"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise RuntimeError("lanemon did not close within 60 s") from None
    t_exit = time.time()
    if proc.returncode != 0:
        raise RuntimeError(f"lanemon exited {proc.returncode}: {err.strip()[-400:]}")
    times = {}
    for line in out.splitlines():
        for what in ("first paint", "complete"):
            if line.startswith(f"lanemon: {what} "):
                times[what] = (float(line.split()[-1]) - t0) * 1000.0
    if "first paint" not in times:
        raise RuntimeError("lanemon never reported its first paint")
    return times["first paint"], times.get("complete", float("nan")), (t_exit - t0) * 1000.0


def _children_cpu_ms() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1000.0


def run(out) -> dict:
    _one_start()  # warm the file cache
    firsts, completes, exits, cpus = [], [], [], []
    load_before = load_text()
    for _ in range(REPEAT):
        c0 = _children_cpu_ms()
        first, complete, whole = _one_start()
        cpus.append(_children_cpu_ms() - c0)     # this start and the worker processes it started
        firsts.append(first)
        completes.append(complete)
        exits.append(whole)
    first = median(firsts)
    out(f"`python -m lanemon`, offscreen, median of {REPEAT} starts after one warm-up: "
        f"process start -> first paint event of the window; {load_before}")
    out(f"first paint: {first:,.0f} ms (each: {', '.join(f'{v:,.0f}' for v in firsts)}); "
        f"every tab there: {median(completes):,.0f} ms; start to clean exit: {median(exits):,.0f} ms; "
        f"CPU time start to exit: {median(cpus):,.0f} ms")
    g = Goal("first paint from process start (median of 5)", first, GOAL_MS)
    out(g.line())
    return {"firstPaintMs": round(first, 1), "firstPaintAllMs": [round(v, 1) for v in firsts],
            "completeMs": round(median(completes), 1), "startToExitMs": round(median(exits), 1),
            "cpuToExitMs": round(median(cpus), 1), "load": load_before,
            "goals": [g.as_dict()], "goalMet": g.met}
