"""Pluggable work: simulated, gated and the CPU job from lanemon.work."""

from __future__ import annotations

import asyncio

import pytest

from lanemon.lanes import (
    CpuWork, GatedWork, InvariantChecker, Scheduler, SimulatedWork, State, as_work,
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
    W = pytest.importorskip("lanemon.work")
    if not hasattr(W, "place"):
        pytest.skip("lanemon.work.place not available yet")
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
    W = pytest.importorskip("lanemon.work")
    if not hasattr(W, "run_sliced_budget"):
        pytest.skip("lanemon.work.run_sliced_budget not available yet")
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
