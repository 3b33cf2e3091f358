"""``lanemon bench sched``: scheduler throughput with the invariants checked.

How it is measured: a seeded burst of ``JOBS`` zero-time jobs (``SimulatedWork(0)``)
over ``WORKSPACES`` workspaces, each job put in the general ``reservations``
queue or the ``cafe`` queue at random, is submitted to a fresh
``lanemon.lanes.Scheduler`` and drained (``join``).  The figure is jobs
divided by wall time from the first submit to the last job finished, so it
includes saving every record three times (queued, running, final), the record
lock, both lanes, the events and the runner tasks.  An
``InvariantChecker`` is subscribed during the measured run (the run pays for
it, as it would for a UI), and after each run the invariants are checked:
never more than one run per workspace at once, per-workspace FIFO starts,
lanes released only after the final save, every job in exactly one terminal
state, all lanes free, no record-lock entry left.  ``REPEATS`` runs; the
median is the figure.  Goal: >= 20,000 jobs/s on a 2-core machine.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import statistics
import time
from collections.abc import Callable

from lanemon.lanes import InvariantChecker, Scheduler, SimulatedWork

JOBS = 60_000
WORKSPACES = 200
REPEATS = 3
GOAL_JOBS_PER_S = 20_000
SEED = 4


async def _one_run(jobs: int, workspaces: int, seed: int) -> tuple[float, Scheduler, InvariantChecker]:
    rng = random.Random(seed)
    names = [f"ws{i:03d}" for i in range(workspaces)]
    plan = [("reservations" if rng.random() < 0.5 else "cafe", rng.choice(names))
            for _ in range(jobs)]
    work = SimulatedWork(0.0)
    s = Scheduler()
    chk = InvariantChecker(s)
    submit = s.submit
    c0 = time.process_time()
    t0 = time.perf_counter()
    for queue, ws in plan:
        await submit(queue, ws, work)
    await s.join()
    elapsed = time.perf_counter() - t0
    s.cpu_s = time.process_time() - c0  # type: ignore[attr-defined]
    return elapsed, s, chk


def run(out: Callable[[str], None], *, jobs: int = JOBS, workspaces: int = WORKSPACES,
        repeats: int = REPEATS) -> dict:
    out(f"sched: {jobs:,} zero-time jobs over {workspaces} workspaces, each in the "
        f"'reservations' or 'cafe' queue at random (seeded); submit all, then drain")
    out("  measured: wall time from the first submit to the last job finished, with an "
        "invariant checker subscribed; median of "
        f"{repeats} runs on {os.cpu_count()} CPU(s)")
    rates: list[float] = []
    cpu_rates: list[float] = []
    problems: list[str] = []
    runs = 0
    stale = 0
    for i in range(repeats):
        gc.collect()
        elapsed, s, chk = asyncio.run(_one_run(jobs, workspaces, SEED + i))
        rates.append(jobs / elapsed)
        cpu_rates.append(jobs / s.cpu_s if s.cpu_s > 0 else float("inf"))
        problems += [f"run {i + 1}: {p}" for p in chk.check()]
        counts = s.counts()
        if counts.jobs_finished != jobs:
            problems.append(f"run {i + 1}: {counts.jobs_finished} of {jobs} jobs finished")
        if chk.max_active > 1:
            problems.append(f"run {i + 1}: {chk.max_active} runs of one workspace at once")
        runs += chk.runs
        stale += counts.stale_releases + counts.stale_writes
        out(f"  run {i + 1}: {jobs / elapsed:,.0f} jobs/s ({elapsed * 1000:.0f} ms, "
            f"{chk.runs:,} runs, at most {chk.max_active} per workspace at once; "
            f"{cpu_rates[-1]:,.0f} jobs per CPU-second of this process)")
    figure = statistics.median(rates)
    verdict = "goal met" if figure >= GOAL_JOBS_PER_S else "BELOW GOAL"
    out(f"jobs/s: {figure:,.0f} (median; best {max(rates):,.0f})   "
        f"goal >= {GOAL_JOBS_PER_S:,} jobs/s on 2 cores -> {verdict}")
    out(f"  per CPU-second of this process: {statistics.median(cpu_rates):,.0f} jobs "
        f"(wall-clock is lower when other processes share the cores; load average "
        f"{os.getloadavg()[0]:.2f})")
    held = not problems
    if not held:
        for p in problems[:20]:
            out(f"  VIOLATION {p}")
        raise AssertionError(f"sched invariants violated: {problems[:5]}")
    out("  checked: <= 1 run per workspace at once; FIFO per workspace; release after "
        "final save; exactly one terminal state per job; lanes free; no lock entries")
    out("invariants held")
    return {
        "jobs": jobs,
        "workspaces": workspaces,
        "repeats": repeats,
        "jobs_per_s": round(figure, 1),
        "runs_jobs_per_s": [round(r, 1) for r in rates],
        "jobs_per_cpu_s": round(statistics.median(cpu_rates), 1),
        "goal_jobs_per_s": GOAL_JOBS_PER_S,
        "goal_met": figure >= GOAL_JOBS_PER_S,
        "stale_refusals": stale,
        "invariants_held": held,
    }
