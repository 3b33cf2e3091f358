"""``lanemon bench sched``: scheduler throughput with the invariants checked.

How it is measured: a seeded burst of ``JOBS`` jobs over ``WORKSPACES``
workspaces, each job put in the general ``reservations`` queue or the
``cafe`` queue at random, is submitted to a fresh ``lanemon.lanes.Scheduler``
and drained (``join``).  Two kinds of work, each its own set of runs:

* **zero-time** works (``SimulatedWork(0)``): they never suspend, so two runs
  of one workspace could not even overlap;
* **suspending** works (``ObservedWork``): each run suspends ``SUSPENDS``
  times (``await asyncio.sleep(0)``: every other ready run proceeds
  meanwhile), and an observer inside the works checks, as they run, that no
  other run of its workspace is inside a work at the same time and that the
  runs of a workspace start in the order their jobs were submitted (job IDs
  rising), and counts every run.

The figure is jobs divided by wall time from the first submit to the last
job finished, so it includes saving every record three times (queued,
running, final), the record lock, both lanes, the events and the runner
tasks.  An ``InvariantChecker`` is subscribed during the measured run (the
run pays for it, as it would for a UI), and after each run the invariants
are checked: never more than one run per workspace at once, per-workspace
FIFO starts, lanes released only after the final save, every job in exactly
one terminal state, all lanes free, no record-lock entry left.  ``REPEATS``
runs of each kind; the median is the figure.  Goals: >= 20,000 jobs/s with
zero-time works and >= 15,000 jobs/s with suspending works on a 2-core
machine, the invariants held (a violation raises ``AssertionError``).

Measured alongside, not judged: before each run, the same plan's works with
no scheduler (``_bare_run``: one task per workspace runs its jobs' works in
submit order, the only order the scheduler may run them in; the same work
objects, the observer told as well). That is the floor any scheduler pays on
this machine now (the works and the loop's task steps; a shared machine's
slow phase shows on it too). The bench prints its rate and the scheduler's
own time per job (``1/rate - 1/floor``, per pair; the median).
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
GOAL_SUSPENDING_JOBS_PER_S = 15_000
SUSPENDS = 2
SEED = 4


class WorkObserver:
    """Inside the works: which runs are in a work now, per workspace, and in what order
    the runs of each workspace started. ``problems`` lists what broke the rules
    (a second run of a workspace inside a work at once; a run starting before an
    earlier-submitted job of its workspace)."""

    __slots__ = ("inside", "last_started", "runs", "max_inside", "now_inside", "peak_inside", "problems")

    def __init__(self) -> None:
        self.inside: dict[str, int] = {}
        self.last_started: dict[str, int] = {}
        self.runs = 0
        self.max_inside = 0          # most runs of one workspace inside a work at once (1: as it must)
        self.now_inside = 0
        self.peak_inside = 0         # most runs of all workspaces inside works at once (they overlap)
        self.problems: list[str] = []

    def enter(self, workspace: str, job_id: int) -> None:
        n = self.inside.get(workspace, 0) + 1
        self.inside[workspace] = n
        self.runs += 1
        self.now_inside += 1
        if self.now_inside > self.peak_inside:
            self.peak_inside = self.now_inside
        if n > self.max_inside:
            self.max_inside = n
        if n > 1 and len(self.problems) < 20:
            self.problems.append(f"job {job_id}: {n} runs of {workspace!r} inside a work at once")
        last = self.last_started.get(workspace, 0)
        if job_id < last and len(self.problems) < 20:
            self.problems.append(f"job {job_id} of {workspace!r} started after job {last}")
        self.last_started[workspace] = max(last, job_id)

    def leave(self, workspace: str) -> None:
        self.now_inside -= 1
        n = self.inside[workspace] - 1
        if n:
            self.inside[workspace] = n
        else:
            del self.inside[workspace]


class ObservedWork:
    """A work that really suspends (``suspends`` times ``await asyncio.sleep(0)``) with
    ``observer`` told when it enters and leaves (see ``WorkObserver``)."""

    __slots__ = ("observer", "suspends")

    def __init__(self, observer: WorkObserver, suspends: int = SUSPENDS) -> None:
        self.observer = observer
        self.suspends = suspends

    def describe(self) -> str:
        return f"observed, suspends {self.suspends}x"

    async def run(self, ctx) -> None:
        ctx.checkpoint()
        observer = self.observer
        observer.enter(ctx.workspace, ctx.job_id)
        try:
            for _ in range(self.suspends):
                await asyncio.sleep(0)
        finally:
            observer.leave(ctx.workspace)


def _plan(jobs: int, workspaces: int, seed: int) -> list[tuple[str, str]]:
    """The seeded burst: (queue, workspace) of each job, in submit order."""
    rng = random.Random(seed)
    names = [f"ws{i:03d}" for i in range(workspaces)]
    return [("reservations" if rng.random() < 0.5 else "cafe", rng.choice(names))
            for _ in range(jobs)]


class _BareContext:
    """What a work reads of its run context when no scheduler runs it: its workspace and
    job ID; ``checkpoint()`` never stops it (no lane to stop)."""

    __slots__ = ("workspace", "job_id")

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        self.job_id = 0

    def checkpoint(self) -> None:
        pass


async def _bare_run(jobs: int, workspaces: int, seed: int, work) -> float:
    """The plan's works with no scheduler: one task per workspace awaits its jobs' works in
    submit order (job IDs from 1, as the scheduler's), all workspaces at once. Seconds from
    the first task made to the last work done: what the works and the loop's task steps
    cost, the floor of ``_one_run``."""
    chains: dict[str, list[int]] = {}
    for job_id, (_queue, ws) in enumerate(_plan(jobs, workspaces, seed), 1):
        chains.setdefault(ws, []).append(job_id)

    async def chain(ws: str, ids: list[int]) -> None:
        ctx = _BareContext(ws)
        run = work.run
        for job_id in ids:
            ctx.job_id = job_id
            await run(ctx)

    t0 = time.perf_counter()
    await asyncio.gather(*(chain(ws, ids) for ws, ids in chains.items()))
    return time.perf_counter() - t0


async def _one_run(jobs: int, workspaces: int, seed: int,
                   work) -> tuple[float, Scheduler, InvariantChecker]:
    plan = _plan(jobs, workspaces, seed)
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


def _work(kind: str) -> tuple[WorkObserver | None, object]:
    """A fresh work of ``kind`` for one run, and its observer (``None`` for zero-time works)."""
    if kind == "suspending":
        observer = WorkObserver()
        return observer, ObservedWork(observer)
    return None, SimulatedWork(0.0)


def _runs(out, kind: str, jobs: int, workspaces: int, repeats: int) -> dict:
    """``repeats`` runs of one kind of work; their figures, and the problems found."""
    rates: list[float] = []
    cpu_rates: list[float] = []
    bare_rates: list[float] = []
    own_us: list[float] = []
    problems: list[str] = []
    runs = inside = stale = 0
    for i in range(repeats):
        # the floor first, with an observer of its own (it checks the bare runs too)
        gc.collect()
        bare_observer, work = _work(kind)
        bare_s = asyncio.run(_bare_run(jobs, workspaces, SEED + i, work))
        if bare_observer is not None and (bare_observer.problems or bare_observer.runs != jobs):
            problems.append(f"{kind} run {i + 1}, no scheduler: {bare_observer.runs} runs of {jobs}; "
                            f"{bare_observer.problems[:3]}")
        gc.collect()
        observer, work = _work(kind)
        elapsed, s, chk = asyncio.run(_one_run(jobs, workspaces, SEED + i, work))
        rates.append(jobs / elapsed)
        bare_rates.append(jobs / bare_s)
        own_us.append((elapsed - bare_s) / jobs * 1e6)
        cpu_rates.append(jobs / s.cpu_s if s.cpu_s > 0 else float("inf"))
        problems += [f"{kind} run {i + 1}: {p}" for p in chk.check()]
        counts = s.counts()
        if counts.jobs_finished != jobs:
            problems.append(f"{kind} run {i + 1}: {counts.jobs_finished} of {jobs} jobs finished")
        if chk.max_active > 1:
            problems.append(f"{kind} run {i + 1}: {chk.max_active} runs of one workspace at once")
        seen = ""
        if observer is not None:
            problems += [f"{kind} run {i + 1}, observed inside the works: {p}" for p in observer.problems]
            if observer.runs != jobs or observer.inside:
                problems.append(f"{kind} run {i + 1}: the works saw {observer.runs} runs of {jobs} jobs, "
                                f"{len(observer.inside)} workspaces still inside")
            inside = max(inside, observer.max_inside)
            seen = (f"; inside the works: {observer.runs:,} runs, at most {observer.max_inside} of one "
                    f"workspace and {observer.peak_inside} of all at once")
        runs += chk.runs
        stale += counts.stale_releases + counts.stale_writes
        out(f"  {kind} run {i + 1}: {jobs / elapsed:,.0f} jobs/s ({elapsed * 1000:.0f} ms, "
            f"{chk.runs:,} runs, at most {chk.max_active} per workspace at once{seen}; "
            f"{cpu_rates[-1]:,.0f} jobs per CPU-second of this process); just before, the same works "
            f"with no scheduler: {bare_rates[-1]:,.0f} jobs/s ({bare_s * 1000:.0f} ms)")
    return {"rate": statistics.median(rates), "rates": rates, "cpu_rate": statistics.median(cpu_rates),
            "bare_rate": statistics.median(bare_rates), "bare_rates": bare_rates,
            "own_us": statistics.median(own_us), "own_us_runs": own_us,
            "problems": problems, "max_inside": inside, "stale": stale}


def run(out: Callable[[str], None], *, jobs: int = JOBS, workspaces: int = WORKSPACES,
        repeats: int = REPEATS) -> dict:
    from lanemon.bench._common import load_text
    from lanemon.bench.goals import Goal

    out(f"sched: {jobs:,} jobs over {workspaces} workspaces, each in the 'reservations' or 'cafe' "
        f"queue at random (seeded); submit all, then drain; zero-time works (never suspend), then "
        f"suspending works ({SUSPENDS} x await asyncio.sleep(0) each, an observer inside the works)")
    out("  measured: wall time from the first submit to the last job finished, with an "
        f"invariant checker subscribed; median of {repeats} runs of each kind on {os.cpu_count()} CPU(s), "
        f"each just after the same works with no scheduler (one task per workspace, in submit order: "
        f"the floor, not judged); {load_text()}")
    zero = _runs(out, "zero-time", jobs, workspaces, repeats)
    susp = _runs(out, "suspending", jobs, workspaces, repeats)
    goals = [Goal("scheduler, zero-time works", zero["rate"], GOAL_JOBS_PER_S, unit="jobs/s", at_least=True),
             Goal("scheduler, suspending works", susp["rate"], GOAL_SUSPENDING_JOBS_PER_S, unit="jobs/s",
                  at_least=True)]
    for name, r, g in (("zero-time", zero, goals[0]), ("suspending", susp, goals[1])):
        out(f"jobs/s, {name} works: {r['rate']:,.0f} (median; best {max(r['rates']):,.0f}; per CPU-second of "
            f"this process {r['cpu_rate']:,.0f})   goal >= {g.goal:,.0f} -> {'goal met' if g.met else 'BELOW GOAL'}")
        out(f"  alongside (not judged): the same works with no scheduler {r['bare_rate']:,.0f} jobs/s (median); "
            f"the scheduler's own time per job {r['own_us']:.1f} us (median of the pairs: "
            f"{', '.join(f'{u:.1f}' for u in r['own_us_runs'])})")
    out(f"  (wall-clock is lower when other processes share the cores; {load_text()})")
    problems = zero["problems"] + susp["problems"]
    held = not problems
    if not held:
        for p in problems[:20]:
            out(f"  VIOLATION {p}")
        raise AssertionError(f"sched invariants violated: {problems[:5]}")
    out("  checked: <= 1 run per workspace at once; FIFO per workspace; release after "
        "final save; exactly one terminal state per job; lanes free; no lock entries; inside the "
        "suspending works: no two runs of a workspace at once, starts in submit order, every job run once")
    out("invariants held")
    for g in goals:
        out(g.line())
    return {
        "jobs": jobs,
        "workspaces": workspaces,
        "repeats": repeats,
        "jobs_per_s": round(zero["rate"], 1),
        "runs_jobs_per_s": [round(r, 1) for r in zero["rates"]],
        "jobs_per_cpu_s": round(zero["cpu_rate"], 1),
        "suspending_jobs_per_s": round(susp["rate"], 1),
        "suspending_runs_jobs_per_s": [round(r, 1) for r in susp["rates"]],
        "suspending_jobs_per_cpu_s": round(susp["cpu_rate"], 1),
        "suspends_per_work": SUSPENDS,
        "bare_jobs_per_s": round(zero["bare_rate"], 1),
        "suspending_bare_jobs_per_s": round(susp["bare_rate"], 1),
        "own_us_per_job": round(zero["own_us"], 2),
        "suspending_own_us_per_job": round(susp["own_us"], 2),
        "goal_jobs_per_s": GOAL_JOBS_PER_S,
        "goal_suspending_jobs_per_s": GOAL_SUSPENDING_JOBS_PER_S,
        "goal_met": all(g.met for g in goals),
        "stale_refusals": zero["stale"] + susp["stale"],
        "invariants_held": held,
        "goals": [g.as_dict() for g in goals],
    }
