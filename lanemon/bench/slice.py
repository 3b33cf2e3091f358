"""``lanemon bench slice``: what slicing costs, and the lag it leaves.

For each budget (2, 4, 8, 16 ms) the same job runs whole and sliced,
``REPEAT`` pairs, with nothing else on the loop (which of the two goes first
alternates). The cost of slicing is judged by pairs: each pair's sliced run
over its whole run, in CPU time of the thread (``time.thread_time``: a
neighbour taking the core mid-run does not count; the sliced run's CPU
includes its yields) -- ``costRatio`` is the median of those ratios; the
wall-clock ratio of the best runs (the spec's ``sliced.workMs /
whole.workMs``) is shown beside. With each pair, one more sliced run under a
1 ms asyncio timer: ``max lag`` is the longest that timer waited, the median
over the runs. At the 8 ms budget the same timer also runs on the idle loop
for as long as a sliced run, alternating with the runs: the machine's own
max lag, printed beside (the preemption a busy machine adds to any run), and
the longest slice in CPU time of the thread (the slicer's own part of the
lag). Goals at 8 ms: costRatio (by pairs) ≤ 1.03 and max lag (median of the
runs) ≤ budget + 3 ms.
"""

from __future__ import annotations

import asyncio
import time

from lanemon.bench._common import idle_lag, job_of_ms, load_text, median
from lanemon.bench.goals import Goal
from lanemon.work import hash_range, run_sliced_budget
from lanemon.work.lag import timed_with_lag

BUDGETS_MS = (2.0, 4.0, 8.0, 16.0)
REPEAT = 5
JOB_MS = 600.0
GOAL_BUDGET_MS = 8.0
GOAL_RATIO = 1.03
GOAL_LAG_OVER_BUDGET_MS = 3.0


def run(out, *, job_ms: float = JOB_MS, repeat: int = REPEAT) -> dict:
    """The figures above (``job_ms`` and ``repeat`` shrink the bench for a quick test)."""
    total, rate = job_of_ms(job_ms)
    load_before = load_text()
    out(f"job: hash_range over {total:,} iterations (~{job_ms:.0f} ms on this machine, "
        f"{rate:,.0f} it/ms); whole vs sliced alternating, {repeat} pairs; lag by a 1 ms asyncio timer; "
        f"{load_before}")

    async def main() -> dict:
        rows = {}
        for budget in BUDGETS_MS:
            whole_ms, sliced_ms, cpu_ratios, max_lags, p99s, slices, idle_max = [], [], [], [], [], [], []
            slice_cpu: list[float] = []
            for i in range(repeat):
                # the cost: a whole and a sliced run in turn, no timer beside them (the lag timer's
                # own ticks would count against the sliced run: ~1,000 loop turns of CPU); which
                # goes first alternates, so whatever favours the first or second of two runs
                # (a cache warmed, the core's clock) falls on both alike
                took = {}
                for kind in (("whole", "sliced") if i % 2 == 0 else ("sliced", "whole")):
                    w0, c0 = time.perf_counter(), time.thread_time()
                    if kind == "whole":
                        expected = hash_range(0, total)
                    else:
                        res = await run_sliced_budget(total, budget)
                    took[kind] = ((time.perf_counter() - w0) * 1000.0, (time.thread_time() - c0) * 1000.0)
                assert res.result == expected
                whole_ms.append(took["whole"][0])
                sliced_ms.append(took["sliced"][0])
                cpu_ratios.append(took["sliced"][1] / took["whole"][1])
                # the lag: a sliced run under the 1 ms timer, each slice's CPU time marked
                marks: list[float] = [time.thread_time()]

                def mark(_done: int, _total: int, marks=marks) -> None:
                    marks.append(time.thread_time())
                s, lag, res = await timed_with_lag(lambda budget=budget, mark=mark: run_sliced_budget(
                    total, budget, on_slice=mark))
                assert res.result == expected
                max_lags.append(lag.max)
                p99s.append(lag.p99)
                slices.append(res.slices)
                # each slice's CPU time with the yield and the timers after it (from one slice's end
                # to the next one's): the slicer's own part of the lag, whatever the machine adds
                slice_cpu.append(max((b - a) * 1000.0 for a, b in zip(marks, marks[1:])))
                if budget == GOAL_BUDGET_MS:      # the idle loop alongside: the machine's own lag
                    idle_max.append((await idle_lag(s / 1000.0)).max)
            rows[f"{budget:g}"] = {
                "budgetMs": budget,
                "costRatio": round(median(cpu_ratios), 3),
                "costRatioPairs": [round(r, 3) for r in cpu_ratios],
                "costRatioWallBest": round(min(sliced_ms) / min(whole_ms), 3),
                "maxLagMs": round(median(max_lags), 2),
                "maxLagRunsMs": [round(v, 2) for v in max_lags],
                "idleMaxLagMs": round(median(idle_max), 2) if idle_max else None,
                "longestSliceCpuMs": round(median(slice_cpu), 2),
                "p99LagMs": round(median(p99s), 2),
                "slices": int(median(slices)),
                "wholeMs": round(median(whole_ms), 1),
            }
        return rows

    rows = asyncio.run(main())
    out(f"{'budget':>8}{'costRatio':>11}{'(wall)':>8}{'max lag':>10}{'p99 lag':>10}{'slices':>8}{'slice CPU':>11}"
        "   (costRatio: CPU, median of pairs; wall: best sliced / best whole; slice CPU: the longest)")
    for row in rows.values():
        out(f"{row['budgetMs']:>6g}ms{row['costRatio']:>11.3f}{row['costRatioWallBest']:>8.3f}"
            f"{row['maxLagMs']:>8.2f}ms{row['p99LagMs']:>8.2f}ms{row['slices']:>8}{row['longestSliceCpuMs']:>9.2f}ms")
    at = rows[f"{GOAL_BUDGET_MS:g}"]
    out(f"at {GOAL_BUDGET_MS:g} ms, each pair's CPU ratio: {', '.join(f'{r:.3f}' for r in at['costRatioPairs'])}; "
        f"each run's max lag: {', '.join(f'{v:.2f}' for v in at['maxLagRunsMs'])} ms; the idle loop's max lag "
        f"alongside (median of {repeat}): {at['idleMaxLagMs']:.2f} ms; {load_text()}")
    goals = [Goal(f"sliced at {GOAL_BUDGET_MS:g} ms: costRatio (CPU, median of pairs)", at["costRatio"],
                  GOAL_RATIO, unit="x", agreed=sum(r <= GOAL_RATIO for r in at["costRatioPairs"]),
                  alternations=repeat),
             Goal(f"sliced at {GOAL_BUDGET_MS:g} ms: max lag (median of runs)", at["maxLagMs"],
                  GOAL_BUDGET_MS + GOAL_LAG_OVER_BUDGET_MS,
                  agreed=sum(v <= GOAL_BUDGET_MS + GOAL_LAG_OVER_BUDGET_MS for v in at["maxLagRunsMs"]),
                  alternations=repeat)]
    for g in goals:
        out(g.line())
    return {"total": total, "load": load_before, "budgets": rows, "goals": [g.as_dict() for g in goals],
            "goalMet": all(g.met for g in goals)}
