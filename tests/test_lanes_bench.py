"""lanemon.lanes stays Qt-free and numpy-free; the sched bench's contract."""

from __future__ import annotations

import subprocess
import sys


def test_lanes_imports_neither_qt_nor_numpy():
    code = ("import sys, lanemon.lanes; "
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('PySide6', 'numpy', 'qasync', 'pyqtgraph', 'shiboken6')]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_sched_bench_small_run_reports_figure_and_invariants():
    from lanemon.bench import sched

    lines: list[str] = []
    result = sched.run(lines.append, jobs=2000, workspaces=200, repeats=1)
    assert "invariants held" in lines
    assert any("jobs/s" in line and "goal" in line for line in lines)
    assert result["invariants_held"] is True and result["jobs"] == 2000
    assert result["workspaces"] == 200 and result["jobs_per_s"] > 0
    assert result["suspending_jobs_per_s"] > 0 and result["suspends_per_work"] >= 1
    assert [g["name"] for g in result["goals"]] == ["scheduler, zero-time works", "scheduler, suspending works"]
    # the floor measured alongside: the same works with no scheduler are faster, the difference
    # is the scheduler's own time per job
    for kind in ("", "suspending_"):
        bare, rate = result[f"{kind}bare_jobs_per_s"], result[f"{kind}jobs_per_s"]
        assert bare > rate > 0
        assert abs(result[f"{kind}own_us_per_job"] - (1 / rate - 1 / bare) * 1e6) < 0.05 * 1e6 / rate
    assert sum("alongside (not judged): the same works with no scheduler" in line for line in lines) == 2


def test_the_floor_runs_each_workspace_s_works_in_submit_order_and_the_workspaces_at_once():
    import asyncio

    from lanemon.bench.sched import ObservedWork, WorkObserver, _bare_run, _plan

    obs = WorkObserver()
    seconds = asyncio.run(_bare_run(300, 12, 5, ObservedWork(obs)))
    assert seconds > 0
    assert obs.runs == 300 and obs.problems == [] and obs.inside == {}
    assert obs.max_inside == 1                     # never two runs of one workspace at once
    assert obs.peak_inside == len({ws for _q, ws in _plan(300, 12, 5)})   # all workspaces at once
    # the job IDs each workspace saw are its jobs' in the plan, numbered from 1 in submit order
    expected = {}
    for job_id, (_q, ws) in enumerate(_plan(300, 12, 5), 1):
        expected[ws] = job_id
    assert obs.last_started == expected


def test_the_observer_inside_the_works_names_an_overlap_and_an_out_of_order_start():
    from lanemon.bench.sched import WorkObserver

    obs = WorkObserver()
    obs.enter("ws1", 1)
    obs.enter("ws2", 2)            # another workspace at the same time: fine
    assert obs.problems == [] and obs.max_inside == 1
    obs.enter("ws1", 3)            # a second run of ws1 while the first is inside its work
    assert obs.problems == ["job 3: 2 runs of 'ws1' inside a work at once"] and obs.max_inside == 2
    for ws in ("ws1", "ws1", "ws2"):
        obs.leave(ws)
    assert obs.inside == {}
    obs.enter("ws2", 1)            # job 1 of ws2 starting after job 2 of ws2: not in submit order
    assert obs.problems[-1] == "job 1 of 'ws2' started after job 2" and obs.runs == 4


def test_suspending_works_really_suspend_and_the_observer_sees_each_run():
    import asyncio

    from lanemon.bench.sched import ObservedWork, WorkObserver
    from lanemon.lanes import Scheduler, SimulatedWork

    async def main(work, obs=None):
        s = Scheduler()
        for i in range(40):
            await s.submit("reservations" if i % 2 else "cafe", f"ws{i % 4}", work)
        await s.join()
        await s.aclose()
        return obs

    obs = WorkObserver()
    asyncio.run(main(ObservedWork(obs, suspends=3), obs))
    assert obs.runs == 40 and obs.problems == [] and obs.inside == {} and obs.max_inside == 1
    assert obs.peak_inside == 4      # runs of the 4 workspaces were inside their works at once

    # the same observer around a work that never suspends never sees two runs inside at once
    never = WorkObserver()

    class Zero(ObservedWork):
        async def run(self, ctx):
            self.observer.enter(ctx.workspace, ctx.job_id)
            await SimulatedWork(0.0).run(ctx)
            self.observer.leave(ctx.workspace)
    asyncio.run(main(Zero(never), never))
    assert never.runs == 40 and never.peak_inside == 1
