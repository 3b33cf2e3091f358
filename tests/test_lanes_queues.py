"""The two queues: the seed scenarios and the scheduler's contract.

Every test drives the loop with gates (asyncio.Event, save holds) and
``settle()`` (a bounded number of zero-sleeps); nothing depends on time.
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from lanemon.lanes import (
    GatedWork,
    InvariantChecker,
    Scheduler,
    SimulatedWork,
    StaleWrite,
    State,
)

pytestmark = pytest.mark.asyncio


async def settle(n: int = 50) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


class Clock:
    """A clock that moves 1 ms each time it is read (shared with test_lanes_close)."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 0.001
        return self.t


def make() -> tuple[Scheduler, InvariantChecker, list]:
    s = Scheduler(clock=Clock())
    events: list = []
    s.subscribe(events.append)
    return s, InvariantChecker(s), events


def state(s: Scheduler, jid: int) -> State:
    return s.store.get(jid).state


def index(events, kind, job_id, state=None) -> int:
    for i, ev in enumerate(events):
        if ev.kind == kind and ev.job_id == job_id and (state is None or ev.state == state):
            return i
    raise AssertionError(f"no {kind} event for job {job_id}")


async def finish(s: Scheduler, chk: InvariantChecker) -> None:
    await s.join()
    assert chk.check() == []


# -- seed scenario (a) ------------------------------------------------------------------

async def test_held_final_save_blocks_same_workspace_cafe_job_not_others():
    s, chk, events = make()
    hold = s.hold_save(queue="reservations", workspace="A", state="succeeded")
    a = await s.submit("reservations", "A")
    cafe_a = await s.submit("cafe", "A")
    b = await s.submit("reservations", "B")
    cafe_c = await s.submit("cafe", "C")
    held = await hold.wait_engaged()
    assert held.id == a
    await settle()
    # other workspaces completed while A's final save is held open
    assert state(s, b) is State.SUCCEEDED and state(s, cafe_c) is State.SUCCEEDED
    # the same workspace's cafe job has not started: A is still claimed
    assert state(s, cafe_a) is State.QUEUED
    snap = s.snapshot()
    assert [j.id for j in snap.queues["cafe"].waiting] == [cafe_a]
    running = snap.queues["reservations"].running
    assert [(j.id, j.phase, j.outcome, j.save_held) for j in running] == \
        [(a, "saving", "succeeded", True)]
    assert [(v.workspace, v.owner) for v in snap.scheduled] == [("A", f"reservations#{a}")]
    assert not any(ev.kind == "started" and ev.job_id == cafe_a for ev in events)
    # open the gate: the final save lands, then the lanes are released, then cafe starts
    hold.release()
    await finish(s, chk)
    assert state(s, a) is State.SUCCEEDED and state(s, cafe_a) is State.SUCCEEDED
    assert index(events, "saved", a, "succeeded") < index(events, "finished", a) \
        < index(events, "started", cafe_a)


# -- seed scenario (b) --------------------------------------------------------------------

async def test_second_job_of_a_workspace_waits_while_another_workspace_finishes():
    s, chk, events = make()
    w1 = GatedWork()
    a1 = await s.submit("reservations", "A", w1)
    a2 = await s.submit("reservations", "A")
    b = await s.submit("reservations", "B")
    await w1.started.wait()
    await settle()
    assert state(s, a1) is State.RUNNING
    assert state(s, a2) is State.QUEUED
    assert state(s, b) is State.SUCCEEDED  # no head-of-line blocking
    w1.open()
    await finish(s, chk)
    assert index(events, "finished", a1) < index(events, "started", a2)
    assert [state(s, j) for j in (a1, a2, b)] == [State.SUCCEEDED] * 3


async def test_no_head_of_line_blocking_with_many_waiting():
    s, chk, _ = make()
    w = GatedWork()
    a = [await s.submit("cafe", "A", w)] + [await s.submit("cafe", "A") for _ in range(20)]
    s.mark_busy("B", "notebook open")
    b = await s.submit("reservations", "B")
    c = await s.submit("cafe", "C")
    await settle()
    assert state(s, c) is State.SUCCEEDED
    assert state(s, b) is State.QUEUED and all(state(s, j) is not State.SUCCEEDED for j in a)
    s.clear_busy("B", "notebook open")
    await settle()
    assert state(s, b) is State.SUCCEEDED
    w.open()
    await finish(s, chk)


async def test_stale_release_after_error_does_not_clear_new_owner():
    s, chk, _ = make()
    w1 = GatedWork(fail="boom")
    w2 = GatedWork()
    a1 = await s.submit("reservations", "A", w1)
    a2 = await s.submit("cafe", "A", w2)
    await w1.started.wait()
    old_sched = s.scheduled_lanes.holder("A")
    old_lane = s.reservations.lanes.holder("A")
    w1.open()
    await w2.started.wait()
    rec1 = s.store.get(a1)
    assert rec1.state is State.FAILED and "boom" in rec1.error and rec1.run_id
    new_sched = s.scheduled_lanes.holder("A")
    assert new_sched.epoch > old_sched.epoch
    # a second cleanup path of the failed run releases again
    assert s.scheduled_lanes.release(old_sched) is False
    assert s.reservations.lanes.release(old_lane) is False
    assert s.scheduled_lanes.holder("A") is new_sched  # the new owner keeps its lane
    # and a late write from the old owner is refused
    with pytest.raises(StaleWrite):
        await s.store.save(s.store.get(a2)._replace(error="late"), fence=(old_sched,))
    counts = s.snapshot().counts
    assert counts.stale_releases == 2 and counts.stale_writes == 1
    w2.open()
    await finish(s, chk)
    assert state(s, a2) is State.SUCCEEDED


async def test_cancel_waits_for_claim_of_same_reservation():
    """claim first: cancel is serialised behind it and becomes a stop request."""
    s, chk, events = make()
    w = GatedWork()
    hold = s.hold_save(state="running")
    x = await s.submit("reservations", "A", w)
    other = await s.submit("cafe", "B")
    await hold.wait_engaged()  # the claim is inside the record lock
    cancel = asyncio.create_task(s.cancel(x))
    await settle()
    assert not cancel.done() and s.record_lock.waiting(x) == 1
    assert state(s, other) is State.SUCCEEDED  # other reservations do not wait
    hold.release()
    assert await cancel == "stop_requested"
    assert state(s, x) is State.RUNNING
    assert index(events, "saved", x, "running") < index(events, "cancel", x)
    w.open()  # the work reaches its next checkpoint and honours the stop
    await finish(s, chk)
    rec = s.store.get(x)
    assert rec.state is State.CANCELLED and rec.attempts == 1


async def test_claim_waits_for_cancel_of_same_reservation():
    """cancel first: the claim is serialised behind it and never runs the work."""
    s, chk, events = make()
    blocker = GatedWork()
    w = GatedWork()
    await s.submit("reservations", "A", blocker)
    x = await s.submit("cafe", "A", w)
    hold = s.hold_save(id=x, state="cancelled")
    cancel = asyncio.create_task(s.cancel(x))
    await hold.wait_engaged()
    blocker.open()  # A is freed while the cancel's save is held: x claims its lanes
    await settle()
    view = s.job(x)
    assert view.phase == "starting" and view.state == "queued"
    assert s.record_lock.waiting(x) == 1 and not w.started.is_set()
    hold.release()
    assert await cancel == "cancelled"
    await finish(s, chk)
    assert state(s, x) is State.CANCELLED and not w.started.is_set()
    assert s.store.get(x).attempts == 0
    assert index(events, "saved", x, "cancelled") < index(events, "finished", x)


async def test_save_that_raises_still_releases_and_records_the_error():
    s, chk, _ = make()
    s.fail_next_save(queue="reservations", state="succeeded", error="disk full")
    a1 = await s.submit("reservations", "A")
    a2 = await s.submit("cafe", "A")
    await finish(s, chk)
    rec = s.store.get(a1)
    assert rec.state is State.FAILED
    assert "final save failed" in rec.error and "disk full" in rec.error
    assert "succeeded" in rec.error  # what the run itself achieved is kept
    assert state(s, a2) is State.SUCCEEDED  # the lanes were released
    assert s.snapshot().counts.failed_saves == 1


async def test_running_save_that_raises_fails_the_job_without_running_it():
    s, chk, _ = make()
    w = GatedWork()
    s.fail_next_save(state="running", error="io error")
    a = await s.submit("cafe", "A", w)
    await finish(s, chk)
    rec = s.store.get(a)
    assert rec.state is State.FAILED and "running save failed" in rec.error
    assert not w.started.is_set()


async def test_failing_dispatch_is_recorded_and_releases():
    s, chk, _ = make()
    a = await s.submit("reservations", "A", SimulatedWork(0, fail="exploded"))
    b = await s.submit("reservations", "A")
    await finish(s, chk)
    rec = s.store.get(a)
    assert rec.state is State.FAILED and rec.error == "WorkFailed: exploded"
    assert state(s, b) is State.SUCCEEDED


async def test_cancel_queued_and_finished_jobs():
    s, chk, _ = make()
    w = GatedWork()
    await s.submit("reservations", "A", w)
    q = await s.submit("reservations", "A")
    assert await s.cancel(q) == "cancelled"
    assert state(s, q) is State.CANCELLED
    assert await s.cancel(q) == "finished"
    assert await s.cancel(999) == "unknown"
    w.open()
    await finish(s, chk)


async def test_request_stop_is_honoured_at_next_checkpoint():
    s, chk, _ = make()
    sleeps = []

    async def fake_sleep(d):
        sleeps.append(d)
        await asyncio.sleep(0)

    a = await s.submit("cafe", "A", SimulatedWork(10.0, step=0.5, sleep=fake_sleep))
    await settle(5)
    assert s.request_stop("A") is True
    assert s.snapshot().scheduled[0].stop_requested
    await finish(s, chk)
    rec = s.store.get(a)
    assert rec.state is State.CANCELLED and len(sleeps) < 20
    assert s.request_stop("A") is False  # free lane: nothing to stop


async def test_fifo_per_workspace_across_both_queues():
    s, chk, events = make()
    w = GatedWork()
    first = await s.submit("reservations", "A", w)
    c = await s.submit("cafe", "A")
    r = await s.submit("reservations", "A")
    c2 = await s.submit("cafe", "A")
    w.open()
    await finish(s, chk)
    starts = [ev.job_id for ev in events if ev.kind == "started"]
    assert starts == [first, c, r, c2]


async def test_project_available_hook_and_kick():
    allowed = {"A": False}
    s = Scheduler(clock=Clock(), project_available=lambda ws: allowed.get(ws, True))
    chk = InvariantChecker(s)
    a = await s.submit("reservations", "A")
    await settle()
    assert state(s, a) is State.QUEUED
    allowed["A"] = True
    s.kick()
    await finish(s, chk)
    assert state(s, a) is State.SUCCEEDED


async def test_snapshot_is_plain_immutable_and_has_history():
    s, chk, _ = make()
    s.mark_busy("Z", "result not confirmed")
    for ws in ("A", "B", "A"):
        await s.submit("reservations", ws)
    await s.submit("cafe", "Z")
    await s.join() if False else None
    await settle()
    snap = s.snapshot()
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.at = 0  # type: ignore[misc]
    with pytest.raises(TypeError):
        snap.queues["x"] = None  # type: ignore[index]
    assert snap.occupancy == {"Z": ("result not confirmed",)}
    assert [sp.queue for sp in snap.history["A"]] == ["reservations", "reservations"]
    assert all(sp.started_at <= sp.ended_at and sp.state == "succeeded"
               for sp in snap.history["A"])
    assert snap.queues["reservations"].counts["succeeded"] == 3
    assert [j.workspace for j in snap.queues["cafe"].waiting] == ["Z"]
    assert snap.workspaces == ("A", "B", "Z")
    s.clear_busy("Z")
    await finish(s, chk)
    # the snapshot taken earlier did not change
    assert [j.workspace for j in snap.queues["cafe"].waiting] == ["Z"]


async def test_aclose_cancels_waiting_and_running():
    s, _, _ = make()
    w = GatedWork()
    a = await s.submit("reservations", "A", w)
    b = await s.submit("reservations", "A")
    await w.started.wait()
    await s.aclose()
    assert state(s, a) is State.CANCELLED and state(s, b) is State.CANCELLED
    assert s.idle_clean() == []


async def test_a_long_run_of_one_workspace_still_yields_to_the_loop():
    """Jobs of one workspace may share a runner task; it yields every
    RUNNER_BATCH jobs, so other loop work keeps running during a burst."""
    s, chk, events = make()
    ticks = 0
    stop = asyncio.Event()

    async def ticker():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0)

    t = asyncio.create_task(ticker())
    for _ in range(320):
        await s.submit("reservations", "A")
    ticks_before = ticks
    await s.join()
    stop.set()
    await t
    assert chk.check() == []
    assert ticks - ticks_before >= 320 // s.RUNNER_BATCH - 1
    starts = [ev.job_id for ev in events if ev.kind == "started"]
    assert starts == sorted(starts) and len(starts) == 320


async def test_aclose_while_a_runner_yields_between_jobs():
    s, chk, _ = make()
    ids = [await s.submit("cafe", "A") for _ in range(3 * s.RUNNER_BATCH)]
    await asyncio.sleep(0)  # the runner runs a batch, then yields with the next claimed
    starting = s.snapshot().queues["cafe"].running
    assert [j.phase for j in starting] == ["starting"]
    await s.aclose()
    assert s.idle_clean() == []
    assert all(s.store.get(j).state in (State.SUCCEEDED, State.CANCELLED) for j in ids)
    rec = s.store.get(starting[0].id)
    assert rec.state is State.CANCELLED and rec.error == "task cancelled before it ran"


async def test_ui_controls_hold_a_jobs_final_save_and_release_it_by_id():
    s, chk, _ = make()
    w = GatedWork()
    a = await s.submit("reservations", "A", w)
    hold = s.hold_save(id=a, terminal=True)
    await w.started.wait()
    assert s.release_holds(a) == 0  # nothing held yet: the hold stays armed
    w.open()
    await hold.wait_engaged()
    snap = s.snapshot()
    assert snap.holds and "holding 1" in snap.holds[0]
    assert s.job(a).save_held and s.job(a).phase == "saving"
    assert s.release_holds(a) == 1
    await finish(s, chk)
    assert state(s, a) is State.SUCCEEDED and s.snapshot().holds == ()


async def test_release_holds_armed_lets_a_jobs_every_hold_go_and_holds_for_counts_them():
    """Two holds set up for one job (Hold clicked twice): ``holds_for`` counts both;
    ``release_holds(id, armed=True)`` releases both, armed or holding, so the final save
    goes through and the count said is the count released."""
    s, chk, _ = make()
    w = GatedWork()
    a = await s.submit("reservations", "A", w)
    wb = GatedWork()
    b = await s.submit("reservations", "B", wb)
    first = s.hold_save(id=a, terminal=True)
    s.hold_save(id=a, terminal=True)
    other = s.hold_save(id=b, terminal=True)
    await w.started.wait()
    assert s.holds_for(a) == 2 and s.holds_for(b) == 1
    w.open()
    await first.wait_engaged()
    assert s.holds_for(a) == 2 and s.job(a).save_held
    assert s.release_holds(a, armed=True) == 2
    assert s.holds_for(a) == 0 and s.holds_for(b) == 1 and not other.released
    assert s.release_holds(b, armed=True) == 1 and other.released
    wb.open()
    await finish(s, chk)
    assert state(s, a) is State.SUCCEEDED and state(s, b) is State.SUCCEEDED


async def test_snapshot_reuses_the_views_of_what_did_not_change():
    """Unchanged jobs, lanes, occupancy and history are the same objects in
    successive snapshots; whatever changed gets a new view with the new values."""
    s, chk, _ = make()
    s.mark_busy("Z", "notebook")
    w = GatedWork()
    a = await s.submit("reservations", "A", w)
    b = await s.submit("cafe", "B")
    await s.submit("cafe", "Z")
    await w.started.wait()
    await settle()
    one = s.snapshot()
    two = s.snapshot()
    ra1, ra2 = one.queues["reservations"].running[0], two.queues["reservations"].running[0]
    assert ra1.id == a and ra1 is ra2 and ra1.phase == "running"
    assert one.scheduled == two.scheduled and all(x is y for x, y in zip(one.scheduled, two.scheduled))
    assert one.occupancy["Z"] is two.occupancy["Z"]
    assert one.history["B"] is two.history["B"] and one.workspaces is two.workspaces
    # a stop request: a new job view and a new lane view, the others kept
    assert await s.cancel(a) == "stop_requested"
    three = s.snapshot()
    ra3 = three.queues["reservations"].running[0]
    assert ra3 is not ra1 and ra3.stop_requested and not ra1.stop_requested
    lane_a = next(x for x in three.scheduled if x.workspace == "A")
    assert lane_a.stop_requested and lane_a is not next(x for x in one.scheduled if x.workspace == "A")
    assert three.queues["cafe"].recent[0] is one.queues["cafe"].recent[0]  # job b, done
    w.open()
    s.clear_busy("Z")
    await finish(s, chk)
    four = s.snapshot()
    assert four.occupancy == {} and one.occupancy == {"Z": ("notebook",)}
    assert [j.state for j in four.queues["reservations"].recent] == ["cancelled"]
    assert ra3.phase == "running"  # an earlier snapshot never changes
    assert [sp.job_id for sp in four.history["A"]] == [a] and "A" not in one.history
    assert one.history["B"] is four.history["B"] and b == one.history["B"][0].job_id


async def test_an_unknown_queue_is_refused_in_one_line_and_nothing_is_queued():
    from lanemon.lanes import UnknownQueue

    s = Scheduler()
    for call in (lambda: s.submit("caffe", "ws", 0.0), lambda: s.burst("caffe", ["ws"], 0.0)):
        with pytest.raises(UnknownQueue) as err:
            await call()
        assert str(err.value) == "no queue 'caffe' (the queues: reservations, cafe)"
        assert isinstance(err.value, KeyError)          # (as before, for a caller catching that)
    with pytest.raises(UnknownQueue):
        s.queue_view("caffe")
    assert s.live_jobs == 0 and s.jobs_submitted == 0
    await s.aclose()
