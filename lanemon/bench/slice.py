"""``lanemon bench slice``: what slicing costs, and the lag it leaves.

For each budget (2, 4, 8, 16 ms) the same job runs whole and sliced,
alternating, five times each. ``costRatio`` is the sliced run's best work
time over the whole run's best (the least disturbed run of each: on a shared
machine single runs of the same job vary by ±5–10 %); the median ratio of
the pairs is shown beside it. ``max lag`` (median over the runs) is the
longest a 1 ms asyncio timer waited during a sliced run. Goal at 8 ms: costRatio ≤ 1.03
and max lag ≤ budget + 3 ms.
"""

from __future__ import annotations

import asyncio

from lanemon.bench._common import goal, job_of_ms, median
from lanemon.work import hash_range, run_sliced_budget
from lanemon.work.lag import timed_with_lag

BUDGETS_MS = (2.0, 4.0, 8.0, 16.0)
REPEAT = 5
JOB_MS = 600.0


def run(out) -> dict:
    total, rate = job_of_ms(JOB_MS)
    out(f"job: hash_range over {total:,} iterations (~{JOB_MS:.0f} ms on this machine, "
        f"{rate:,.0f} it/ms); whole vs sliced alternating, median of {REPEAT}; lag by a 1 ms asyncio timer")

    async def main() -> dict:
        rows = {}
        for budget in BUDGETS_MS:
            whole_ms, sliced_ms, max_lags, p99s, slices = [], [], [], [], []
            for _ in range(REPEAT):
                w, _, expected = await timed_with_lag(lambda: hash_range(0, total))
                s, lag, res = await timed_with_lag(lambda budget=budget: run_sliced_budget(total, budget))
                assert res.result == expected
                whole_ms.append(w)
                sliced_ms.append(s)
                max_lags.append(lag.max)
                p99s.append(lag.p99)
                slices.append(res.slices)
            ratios = [s / w for s, w in zip(sliced_ms, whole_ms)]
            rows[f"{budget:g}"] = {
                "budgetMs": budget,
                "costRatio": round(min(sliced_ms) / min(whole_ms), 3),
                "costRatioMedianOfPairs": round(median(ratios), 3),
                "maxLagMs": round(median(max_lags), 2),
                "p99LagMs": round(median(p99s), 2),
                "slices": int(median(slices)),
                "wholeMs": round(median(whole_ms), 1),
            }
        return rows

    rows = asyncio.run(main())
    out(f"{'budget':>8}{'costRatio':>11}{'(pairs)':>9}{'max lag':>10}{'p99 lag':>10}{'slices':>8}")
    for row in rows.values():
        out(f"{row['budgetMs']:>6g}ms{row['costRatio']:>11.3f}{row['costRatioMedianOfPairs']:>9.3f}"
            f"{row['maxLagMs']:>8.2f}ms{row['p99LagMs']:>8.2f}ms{row['slices']:>8}")
    at8 = rows["8"]
    ok = at8["costRatio"] <= 1.03 and at8["maxLagMs"] <= 8 + 3
    out(f"goal at 8 ms: costRatio <= 1.03 and max lag <= 11 ms -> {goal(ok)}")
    return {"total": total, "budgets": rows, "goalMet": ok}
