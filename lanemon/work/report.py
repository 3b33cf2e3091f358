"""The measurement report (``lanemon measure``; Export in the window).

Shape (seed 003, with ``python`` where the seed had ``node``)::

    {python, total,
     runs: {whole, sliced, worker},      # each: samples, p50, p99, max, workMs, result
                                         # sliced also: slices
     slicing: {costRatio, tailRatio, sliceMs},
     worker: {startupMs}}

- ``costRatio = sliced.workMs / whole.workMs`` (3 decimals)
- ``tailRatio = whole.max / sliced.max`` (2 decimals; ``null`` if the sliced
  run recorded no lag at all)
- ``sliceMs = sliced.workMs / sliced.slices`` (3 decimals)

Lag figures and ``workMs`` are milliseconds rounded to 3 decimals. The three
``result`` values are equal (``build_report`` refuses otherwise).
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable

from lanemon.work.lag import LagStats, timed_with_lag
from lanemon.work.runs import DEFAULT_TOTAL, RunResult, RunSpec, run_job
from lanemon.work.runs import MAX_TOTAL as MAX_TOTAL  # defined in lanemon.work.runs; re-exported
from lanemon.work.slicing import AIM
from lanemon.work.workers import spawn_cost_ms


def run_entry(stats: LagStats, work_ms: float, result: int, **extra) -> dict:
    """One run of the report: ``samples, p50, p99, max, workMs, result`` (+extra)."""
    s = stats.as_dict()
    entry = {"samples": s["samples"], "p50": s["p50"], "p99": s["p99"], "max": s["max"],
             "workMs": round(work_ms, 3), "result": result}
    entry.update(extra)
    return entry


def entry_of(run: RunResult, stats: LagStats) -> dict:
    """A finished run (``run_job``) as a report entry: ``run_entry`` of its work time and result,
    with ``slices`` for a sliced run."""
    extra = {"slices": run.slices} if run.spec.family == "sliced" else {}
    return run_entry(stats, run.work_ms, run.result, **extra)


def slicing_figures(whole: dict, sliced: dict) -> dict:
    """``costRatio``, ``tailRatio`` and ``sliceMs`` of a whole and a sliced run entry."""
    return {
        "costRatio": round(sliced["workMs"] / whole["workMs"], 3) if whole["workMs"] > 0 else None,
        "tailRatio": round(whole["max"] / sliced["max"], 2) if sliced["max"] > 0 else None,
        "sliceMs": round(sliced["workMs"] / sliced["slices"], 3) if sliced["slices"] else None,
    }


def build_report(total: int, whole: dict, sliced: dict, worker: dict, startup_ms: float) -> dict:
    """Assemble the seed-shaped report from three run entries."""
    results = {whole["result"], sliced["result"], worker["result"]}
    if len(results) != 1:
        raise ValueError(f"the three runs disagree: {whole['result']}, {sliced['result']}, {worker['result']}")
    return {
        "python": platform.python_version(),
        "total": total,
        "runs": {"whole": whole, "sliced": sliced, "worker": worker},
        "slicing": slicing_figures(whole, sliced),
        "worker": {"startupMs": round(startup_ms, 3)},
    }


Progress = Callable[[str], None]


async def measure(
    total: int = DEFAULT_TOTAL,
    *,
    slice_size: int | None = None,
    slice_ms: float | None = None,
    worker: str = "cold",
    progress: Progress | None = None,
    lag_period_ms: float = 1.0,
) -> dict:
    """Run whole, sliced and worker (``run_job``) under a lag recorder; return the report.

    Slicing is by ``slice_size`` if given, else by ``slice_ms`` (default
    ``DEFAULT_SLICE_MS``); giving both is refused (``ValueError``, before any run).
    Each entry's ``workMs`` is the run's own ``work_ms``.
    """
    say = progress or (lambda _msg: None)
    whole_spec = RunSpec("whole", total)
    sliced_spec = RunSpec("sliced", total, slice_size=slice_size, slice_ms=slice_ms)
    worker_spec = RunSpec(worker, total)
    if worker_spec.family != "worker":
        raise ValueError(f"unknown worker kind {worker!r}")

    async def timed(spec: RunSpec, on_slice=None) -> dict:
        _work, lag, run = await timed_with_lag(lambda: run_job(spec, on_slice=on_slice), lag_period_ms)
        return entry_of(run, lag)

    say(f"whole: {total:,} iterations in one piece (the loop is blocked meanwhile)")
    whole = await timed(whole_spec)

    last = [time.perf_counter()]

    def on_slice(done: int, all_: int) -> None:
        now = time.perf_counter()
        if now - last[0] >= 0.5:
            last[0] = now
            say(f"sliced: {100.0 * done / all_:5.1f}%")

    budget = sliced_spec.budget_ms
    aimed = f" (aimed at {AIM * budget:g} ms)" if budget is not None else ""
    say(f"sliced: {total:,} iterations in {sliced_spec.how}{aimed}")
    sliced = await timed(sliced_spec, on_slice)

    say("worker: measuring start-up (an empty job in a cold worker)")
    startup = await spawn_cost_ms()
    say(f"worker: {total:,} iterations in a {worker_spec.how}")
    worker_entry = await timed(worker_spec)

    return build_report(total, whole, sliced, worker_entry, startup)


def summary(report: dict) -> str:
    """A readable multi-line summary of a report."""
    runs = report["runs"]
    lines = [f"lanemon measure — Python {report['python']}, total {report['total']:,}", ""]
    lines.append(f"{'run':<8}{'workMs':>10}{'samples':>9}{'p50':>8}{'p99':>8}{'max':>10}  result")
    for name in ("whole", "sliced", "worker"):
        r = runs[name]
        lines.append(f"{name:<8}{r['workMs']:>10.1f}{r['samples']:>9}{r['p50']:>8.2f}{r['p99']:>8.2f}"
                     f"{r['max']:>10.2f}  {r['result']}")
    s = report["slicing"]
    lines.append("")
    lines.append(f"slicing: costRatio {s['costRatio']}  tailRatio {s['tailRatio']}  sliceMs {s['sliceMs']}  "
                 f"({runs['sliced']['slices']} slices)")
    lines.append(f"worker:  startupMs {report['worker']['startupMs']}")
    same = len({runs[k]['result'] for k in runs}) == 1
    lines.append(f"results: {'all three equal' if same else 'DIFFER'}")
    return "\n".join(lines)
