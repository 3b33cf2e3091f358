"""Pluggable work: simulated, gated and the CPU job from lanemon.work."""

from __future__ import annotations

import asyncio

import pytest

from lanemon.lanes import (
    CpuWork,
    GatedWork,
    InvariantChecker,
    Scheduler,
    SimulatedWork,
    State,
    as_work,
)

pytestmark = pytest.mark.asyncio


async def test_as_work_and_simulated_work():
    assert as_work(None).duration == 0.0
    assert as_work(0.25).duration == 0.25
    g = GatedWork()
    assert as_work(g) is g
    with pytest.raises(TypeError):
        as_work("soon")
    with pytest.raises(ValueError):
        SimulatedWork(-1)
    with pytest.raises(ValueError):
        CpuWork(5, where="gpu")

    slept: list[float] = []

    async def fake_sleep(d: float) -> None:
        slept.append(d)

    s = Scheduler()
    chk = InvariantChecker(s)
    a = await s.submit("reservations", "A", SimulatedWork(0.12, step=0.05, sleep=fake_sleep))
    b = await s.submit("cafe", "A", SimulatedWork(0.0, fail="nope"))
    await s.join()
    assert chk.check() == []
    assert slept == pytest.approx([0.05, 0.05, 0.02])
    assert s.store.get(a).state is State.SUCCEEDED
    assert s.store.get(b).state is State.FAILED and "nope" in s.store.get(b).error


async def test_cpu_work_placed_by_lanemon_work():
    import lanemon.work as W

    s = Scheduler()
    chk = InvariantChecker(s)
    placed = []
    s.subscribe(lambda ev: placed.append((ev.job_id, ev.detail)) if ev.kind == "placed" else None)
    jobs = {
        "loop": CpuWork(0.5),                                   # <= 1 ms -> loop
        "slice": CpuWork(5, shared_state=True, slice_ms=1.0),   # shared state -> slice
        "worker": CpuWork(80, worker_kind="thread"),            # >= threshold -> worker
    }
    ids = {}
    for i, (want, work) in enumerate(jobs.items()):
        assert work.placement() == want
        ids[want] = await s.submit("reservations", f"ws{i}", work)
    await s.join()
    assert chk.check() == []
    for want, jid in ids.items():
        view = s.job(jid)
        assert view.state == "succeeded" and view.placement == want
        total = W.iterations_for_ms(jobs[want].cpu_ms)
        assert view.result == repr(W.hash_range(0, total))
    assert sorted(d for _, d in placed) == ["loop", "slice", "worker"]


async def test_cpu_work_sliced_honours_stop_between_slices():
    s = Scheduler()
    chk = InvariantChecker(s)
    seen_slice = asyncio.Event()
    work = CpuWork(200, where="slice", slice_ms=1.0)

    def on_event(ev):
        if ev.kind == "placed":
            seen_slice.set()

    s.subscribe(on_event)
    jid = await s.submit("cafe", "A", work)
    await seen_slice.wait()
    await asyncio.sleep(0)
    assert s.request_stop("A")
    await s.join()
    assert chk.check() == []
    assert s.store.get(jid).state is State.CANCELLED


async def test_simulated_work_honours_a_stop_at_once_without_polling():
    """A long SimulatedWork waits on its lane, not on a step timer: a stop request,
    a cancel or a revoke ends its wait at the next loop turns (no time passes)."""

    async def settle(n: int = 30) -> None:
        for _ in range(n):
            await asyncio.sleep(0)

    s = Scheduler()
    started: list[int] = []
    s.subscribe(lambda ev: started.append(ev.job_id) if ev.kind == "started" else None)
    a = await s.submit("cafe", "A", SimulatedWork(3600.0))
    b = await s.submit("reservations", "B", SimulatedWork(3600.0))
    c = await s.submit("reservations", "C", SimulatedWork(3600.0))
    await settle()
    assert sorted(started) == [a, b, c]
    assert s.request_stop("A")
    assert await s.cancel(b) == "stop_requested"
    s.scheduled_lanes.revoke("C")    # a lost lane: the owner must stop too
    await settle()
    for jid in (a, b):
        assert s.job(jid).phase == "done" and s.job(jid).state == "cancelled", s.job(jid)
    assert s.job(c).phase == "done"      # stopped; its final write is refused (fenced)
    await s.join()
    assert s.store.get(a).state is State.CANCELLED and s.store.get(b).state is State.CANCELLED
    assert s.job(c).error, s.job(c)


async def test_simulated_work_runs_its_duration_then_succeeds():
    s = Scheduler()
    chk = InvariantChecker(s)
    a = await s.submit("cafe", "A", SimulatedWork(0.02))
    await s.join()
    assert chk.check() == []
    assert s.store.get(a).state is State.SUCCEEDED


async def test_lane_stop_waiters_resolve_on_stop_revoke_release_only_once():
    from lanemon.lanes import ProjectLanes

    loop = asyncio.get_running_loop()
    lanes = ProjectLanes("t", clock=lambda: 1.0)
    a = lanes.claim("A", "run1")
    f1, f2, gone = loop.create_future(), loop.create_future(), loop.create_future()
    for f in (f1, f2, gone):
        lanes.add_stop_waiter(a, f)
    lanes.remove_stop_waiter(a, gone)
    assert not f1.done()
    assert lanes.request_stop("A", "why")
    assert f1.result() is True and f2.result() is True and not gone.done()
    late = loop.create_future()
    lanes.add_stop_waiter(a, late)                  # already stopped: resolved at once
    assert late.result() is True
    assert lanes.release(a)
    b = lanes.claim("A", "run2")                    # the next owner starts without a stop
    fb, stale = loop.create_future(), loop.create_future()
    lanes.add_stop_waiter(b, fb)
    lanes.add_stop_waiter(a, stale)                 # an old token: it lost the lane
    assert stale.result() is True and not fb.done()
    assert lanes.revoke("A") is b and fb.result() is True
    c = lanes.claim("A", "run3")
    fc = loop.create_future()
    lanes.add_stop_waiter(c, fc)
    assert lanes.release(c) and fc.result() is True


async def test_cpu_work_notes_its_placement_then_its_slices():
    """CpuWork's notes, as its RunContext receives them: ``placement`` before the job runs and,
    for a sliced run that ends, ``slices`` (an int: how many slices it took)."""
    import lanemon.work as W
    from lanemon.lanes import RunContext

    def context(notes: list) -> RunContext:
        return RunContext(1, "A", "cafe", "run1", (), lambda key, value: notes.append((key, value)))

    for where in ("loop", "worker"):
        notes: list = []
        result = await CpuWork(2, where=where, worker_kind="thread").run(context(notes))
        assert notes == [("placement", where)]
        assert result == W.hash_range(0, W.iterations_for_ms(2))
    notes = []
    work = CpuWork(20, where="slice", slice_ms=1.0)
    result = await work.run(context(notes))
    total = W.iterations_for_ms(20)
    assert result == W.hash_range(0, total)
    assert [key for key, _ in notes] == ["placement", "slices"] and notes[0][1] == "slice"
    slices = notes[1][1]
    assert type(slices) is int and 1 <= slices <= -(-total // W.slicing.MIN_SLICE)


async def test_cpu_work_slices_are_kept_on_the_job():
    """The ``slices`` note reaches the job view with the placement (``JobView.notes``, kept
    by the scheduler; before, ``_Job.note`` kept only the placement and dropped ``slices``)."""
    s = Scheduler()
    jid = await s.submit("cafe", "A", CpuWork(20, where="slice", slice_ms=1.0))
    await s.join()
    view = s.job(jid)
    notes = dict(view.notes)
    assert view.state == "succeeded" and view.placement == "slice" == notes["placement"]
    assert type(notes["slices"]) is int and notes["slices"] >= 1
