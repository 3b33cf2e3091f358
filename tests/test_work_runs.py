"""The one run dispatch (``lanemon.work.runs``): kinds, the run record, refusals, stops and
time-outs; the defaults named once; measure, the window and the lanes' CPU works all use it."""

from __future__ import annotations

import asyncio

import pytest

from lanemon.work import (
    DEFAULT_SLICE_MS,
    DEFAULT_TOTAL,
    MAX_TOTAL,
    RUN_KINDS,
    WINDOW_TOTAL,
    RunSpec,
    RunTimedOut,
    SliceStopped,
    family,
    hash_range,
    run_job,
    shutdown_workers,
)


def test_kinds_and_their_families():
    assert RUN_KINDS == ("whole", "sliced", "cold", "warm", "thread")
    assert [family(k) for k in RUN_KINDS] == ["whole", "sliced", "worker", "worker", "worker"]
    assert RunSpec("warm", 10).family == "worker"
    with pytest.raises(ValueError, match="unknown run kind"):
        family("fork")


def test_a_spec_refuses_what_cannot_run_and_says_how_it_runs():
    with pytest.raises(ValueError, match="unknown run kind"):
        RunSpec("fork", 10)
    with pytest.raises(ValueError, match="at most one"):
        RunSpec("sliced", 10, slice_size=5, slice_ms=1.0)
    for kind in ("whole", "cold", "warm", "thread"):
        with pytest.raises(ValueError, match="not sliced"):
            RunSpec(kind, 10, slice_ms=1.0)
        with pytest.raises(ValueError, match="not sliced"):
            RunSpec(kind, 10, slice_size=5)
    assert RunSpec("whole", 10).how == "one piece, on the loop"
    assert RunSpec("sliced", 10, slice_size=10_000).how == "slices of 10,000"
    assert RunSpec("sliced", 10, slice_ms=2.5).how == "slices of at most ~2.5 ms"
    assert RunSpec("sliced", 10).how == "slices of at most ~8 ms"
    assert RunSpec("sliced", 10).budget_ms == DEFAULT_SLICE_MS == 8.0
    assert RunSpec("sliced", 10, slice_size=5).budget_ms is None
    assert RunSpec("thread", 10).how == "thread worker"


def test_each_default_has_one_name_and_its_value(qapp):
    """The window starts at WINDOW_TOTAL, measure at DEFAULT_TOTAL; both refuse above MAX_TOTAL."""
    from lanemon.cli import build_parser
    from lanemon.ui.heartbeat.timer import Heartbeat
    from lanemon.ui.runs.controller import RunController
    from lanemon.ui.runs.panel import RunsPanel

    assert (DEFAULT_TOTAL, WINDOW_TOTAL, MAX_TOTAL) == (40_000_000, 4_000_000, 500_000_000)
    assert build_parser().parse_args(["measure"]).total == DEFAULT_TOTAL
    panel = RunsPanel(RunController(Heartbeat()))
    try:
        assert panel.size.value() == WINDOW_TOTAL
        assert panel.size.maximum() == MAX_TOTAL
    finally:
        panel.deleteLater()


def test_every_kind_gives_the_whole_answer_and_its_record():
    total = 120_000
    expected = hash_range(0, total)
    specs = [RunSpec("whole", total), RunSpec("sliced", total, slice_size=25_000),
             RunSpec("sliced", total, slice_ms=0.5), RunSpec("sliced", total),
             RunSpec("cold", total), RunSpec("warm", total), RunSpec("thread", total)]

    async def main():
        try:
            out = []
            for spec in specs:
                starts = []
                ran = await run_job(spec, on_start=starts.append)
                out.append((ran, starts))
            return out
        finally:
            shutdown_workers()

    for spec, (ran, starts) in zip(specs, asyncio.run(main())):
        assert ran.spec is spec and (ran.kind, ran.total) == (spec.kind, total)
        assert ran.result == expected, spec
        assert starts == [ran.t_start] and ran.t_end >= ran.t_start
        assert ran.work_ms == pytest.approx((ran.t_end - ran.t_start) * 1000.0)
        if spec.kind == "sliced":
            assert ran.slices >= 1
        else:
            assert ran.slices is None


def test_a_sliced_run_by_size_counts_its_slices():
    async def main():
        return [await run_job(RunSpec("sliced", total, slice_size=25_000)) for total in (120_000, 1, 0)]

    assert [ran.slices for ran in asyncio.run(main())] == [5, 1, 0]


def test_a_whole_run_runs_in_one_step_of_its_task():
    """Nothing else runs on the loop between its start and its end (a signal's CancelledError
    raised in hash_range reaches the awaiting task unchanged)."""

    async def main():
        loop = asyncio.get_running_loop()
        others: list[int] = []
        loop.call_soon(others.append, 1)
        ran = await run_job(RunSpec("whole", 50_000))
        seen = list(others)
        await asyncio.sleep(0)
        return ran, seen, others

    ran, seen, others = asyncio.run(main())
    assert ran.result == hash_range(0, 50_000)
    assert seen == [] and others == [1]


def test_a_whole_run_cannot_time_out():
    with pytest.raises(ValueError, match="cannot time out"):
        asyncio.run(run_job(RunSpec("whole", 10), timeout_s=1.0))


def test_a_sliced_run_reports_progress_and_stops_when_asked():
    progress: list[tuple[int, int]] = []

    def stop_after_three() -> bool:
        return len(progress) >= 3

    with pytest.raises(SliceStopped):
        asyncio.run(run_job(RunSpec("sliced", 100_000, slice_size=10_000),
                            on_slice=lambda done, total: progress.append((done, total)),
                            should_stop=stop_after_three))
    assert progress == [(10_000, 100_000), (20_000, 100_000), (30_000, 100_000)]


def test_a_cancel_reaches_the_caller_unchanged():
    async def main():
        slices = asyncio.Event()
        task = asyncio.ensure_future(run_job(RunSpec("sliced", 10**9, slice_size=10_000),
                                             on_slice=lambda _d, _t: slices.set()))
        await slices.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_a_worker_run_over_its_time_limit_times_out():
    """The thread stops at its next check; the caller gets RunTimedOut with the limit."""

    async def main():
        return await run_job(RunSpec("thread", 10**12), timeout_s=0.2)

    with pytest.raises(RunTimedOut) as caught:
        asyncio.run(main())
    assert caught.value.seconds == 0.2


def test_measure_the_window_and_the_lanes_dispatch_through_run_job(monkeypatch, qapp):
    """The one dispatch: each caller's runs go through run_job, of the kind it asked for."""
    import lanemon.ui.runs.controller as controller
    import lanemon.work
    import lanemon.work.report as report
    from lanemon.lanes import CpuWork, Scheduler
    from lanemon.ui.heartbeat.timer import Heartbeat

    seen: dict[str, list[str]] = {"measure": [], "window": [], "lanes": []}

    def spy(caller: str):
        def dispatch(spec, **kwargs):
            seen[caller].append(spec.kind)
            return run_job(spec, **kwargs)
        return dispatch

    monkeypatch.setattr(report, "run_job", spy("measure"))
    monkeypatch.setattr(controller, "run_job", spy("window"))
    monkeypatch.setattr(lanemon.work, "run_job", spy("lanes"))   # CpuWork finds it there

    async def main():
        try:
            rep = await report.measure(30_000, slice_size=10_000, worker="thread")
            c = controller.RunController(Heartbeat())
            ended = asyncio.Event()
            c.outcome.connect(lambda _text, _error: ended.set() if c.ended == 3 else None)
            recs = (c.start_whole(30_000), c.start_sliced(30_000, slice_ms=1.0),
                    c.start_worker(30_000, "thread"))
            await asyncio.wait_for(ended.wait(), 60)
            assert [rec.status for rec in recs] == ["done"] * 3, [rec.error for rec in recs]
            s = Scheduler()
            for i, where in enumerate(CpuWork.PLACES):
                await s.submit("cafe", f"ws{i}", CpuWork(2, where=where, worker_kind="thread"))
            await s.join()
            return rep
        finally:
            shutdown_workers()

    rep = asyncio.run(main())
    assert rep["runs"]["sliced"]["slices"] == 3
    # the window's three runs are in flight together (the whole one first lets the window paint)
    assert {caller: sorted(kinds) for caller, kinds in seen.items()} == {
        caller: ["sliced", "thread", "whole"] for caller in ("measure", "window", "lanes")}
