"""Adopted jobs: schedulers of several processes (here: sessions of one loop) take jobs
queued in one store; the store's transition rule decides who runs each (``Scheduler.adopt``).
And claims that raise (a store gone away) leave the job waiting."""

from __future__ import annotations

import asyncio
import random
import time

import pytest
from engines import LanesOverMemory, open_test_store

from lanemon.lanes import EventHub, Scheduler
from lanemon.lanes.records import State
from lanemon.lanes.work import GatedWork, SimulatedWork
from lanemon.store.memory import memory_lanes
from lanemon.store.sql import open_sql_store
from lanemon.store.sql.backend import JobSpec
from lanemon.store.url import StoreError, parse

pytestmark = pytest.mark.asyncio


def _scheduler(store, name: str, *, local: bool = False) -> Scheduler:
    hub = EventHub()
    if local:
        return Scheduler(lanes=memory_lanes, store=store.records(events=hub, writer=name, fenced=False),
                         events=hub)
    return Scheduler(lanes=store.lanes, store=store.records(events=hub, writer=name), events=hub)


async def _sessions(request, n: int):
    first = await open_test_store(request, "sqlite")
    more = [await open_sql_store(parse(first.url.text), name=f"s{i}") for i in range(1, n)]
    return [first, *more]


@pytest.mark.parametrize("seed", range(6))
async def test_jobs_adopted_by_several_schedulers_run_once_and_the_others_let_them_go(request, seed):
    rng = random.Random(seed)
    stores = await _sessions(request, 3)
    scheds = [_scheduler(s, f"agent{i}") for i, s in enumerate(stores)]
    # (another process's release is not told to this one: look at waiting workspaces again)
    retries = [asyncio.ensure_future(s.retry_waiting(0.002)) for s in scheds]
    events = {i: [] for i in range(3)}
    for i, sched in enumerate(scheds):
        sched.subscribe(events[i].append)
    try:
        ids = await stores[0].submit([JobSpec(f"w{i % 3}", rng.choice(["reservations", "cafe"]))
                                      for i in range(30)])
        queued = await stores[0].queued_jobs(["reservations", "cafe"], 0, 100)
        assert [j.record.id for j in queued] == ids
        # each scheduler adopts every job, in a seeded interleaving, with short works
        plan = [(i, job) for i in range(3) for job in queued]
        rng.shuffle(plan)
        for i, job in plan:
            scheds[i].adopt(job.record.queue, job.record, SimulatedWork(rng.choice([0.0, 0.001])))
            if rng.random() < 0.3:
                await asyncio.sleep(0)
        for sched in scheds:
            await asyncio.wait_for(sched.join(), 30)
        dump = await stores[0].dump()
    finally:
        for task in retries:
            task.cancel()
        await asyncio.gather(*retries, return_exceptions=True)
        for sched in scheds:
            await sched.aclose()
        for s in stores:
            await s.close()

    assert [j["state"] for j in dump["jobs"]] == ["succeeded"] * 30
    assert all(j["attempts"] == 1 for j in dump["jobs"])
    ran = {i: {e.job_id for e in events[i] if e.kind == "finished"} for i in range(3)}
    assert set().union(*ran.values()) == set(ids)
    assert sum(len(r) for r in ran.values()) == 30, "a job ran in two schedulers"
    for i, sched in enumerate(scheds):
        owners = {j["id"] for j in dump["jobs"] if j["owner"] == f"agent{i}"}
        assert owners == ran[i]
        assert sched.jobs_submitted == sched.jobs_adopted == 30
        assert sched.jobs_finished + sched.taken_elsewhere == 30
        assert sched.counts().unsaved_finals == 0 and sched.store.stale_writes == 0
        dropped = [e for e in events[i] if e.kind == "taken_elsewhere"]
        assert len(dropped) == sched.taken_elsewhere
        assert all("running save refused: InvalidTransition" in e.detail for e in dropped)
        assert {e.job_id for e in dropped}.isdisjoint(ran[i])
        assert sched.idle_clean() == []
    assert dump["ledger"] == [] and dump["lanes"] == []


async def test_a_closing_scheduler_leaves_its_waiting_adopted_jobs_queued_in_the_store(request):
    (store,) = await _sessions(request, 1)
    sched = _scheduler(store, "agent")
    try:
        await store.submit([JobSpec("w", "reservations") for _ in range(3)])
        jobs = await store.queued_jobs(["reservations"], 0, 10)
        gate = GatedWork()
        assert sched.adopt("reservations", jobs[0].record, gate)
        for job in jobs[1:]:
            assert sched.adopt("reservations", job.record, None)
        assert not sched.adopt("reservations", jobs[1].record, None)  # already live here
        await asyncio.wait_for(gate.started.wait(), 5)
        assert sched.adopted_waiting() == 2
        closing = asyncio.ensure_future(sched.aclose("agent stopping"))
        await asyncio.sleep(0)
        gate.open()
        await asyncio.wait_for(closing, 10)
        states = {j["id"]: j["state"] for j in (await store.dump())["jobs"]}
    finally:
        await sched.aclose()
        await store.close()
    # the running one was cancelled by aclose (its task) or finished; the waiting ones untouched
    first = jobs[0].record.id
    assert states[first] in ("succeeded", "cancelled")
    assert [states[j.record.id] for j in jobs[1:]] == ["queued", "queued"]
    assert sched.taken_elsewhere == 2 and sched.idle_clean() == []


async def test_let_go_adopted_drops_only_the_waiting_ones(request):
    (store,) = await _sessions(request, 1)
    sched = _scheduler(store, "agent")
    try:
        await store.submit([JobSpec("w", "cafe"), JobSpec("w", "cafe"), JobSpec("v", "reservations")])
        jobs = await store.queued_jobs(["reservations", "cafe"], 0, 10)
        gate = GatedWork()
        sched.adopt("cafe", jobs[0].record, gate)
        sched.adopt("cafe", jobs[1].record, None)
        store.backend.clock_skew = 0.0
        assert not sched.adopt("cafe", jobs[2].record, None)  # a job of another queue
        await asyncio.wait_for(gate.started.wait(), 5)
        assert sched.let_go_adopted("store lost") == 1
        gate.open()
        await asyncio.wait_for(sched.join(), 5)
        states = {j["id"]: j["state"] for j in (await store.dump())["jobs"]}
    finally:
        await sched.aclose()
        await store.close()
    assert [states[j.record.id] for j in jobs] == ["succeeded", "queued", "queued"]


async def test_unfenced_records_on_local_lanes_overlap_a_workspace_but_never_run_a_job_twice(request):
    """``--lanes local``: each scheduler has its own in-memory lanes (the seed's design scaled
    out): two jobs of one workspace run at once in two schedulers; one job still runs once."""
    stores = await _sessions(request, 2)
    scheds = [_scheduler(s, f"local{i}", local=True) for i, s in enumerate(stores)]
    try:
        await stores[0].submit([JobSpec("w", "reservations") for _ in range(2)])
        jobs = await stores[0].queued_jobs(["reservations"], 0, 10)
        gates = [GatedWork(), GatedWork()]
        # scheduler 0 takes job 1, scheduler 1 takes job 2 then also job 1
        scheds[0].adopt("reservations", jobs[0].record, gates[0])
        scheds[1].adopt("reservations", jobs[1].record, gates[1])
        await asyncio.wait_for(asyncio.gather(gates[0].started.wait(), gates[1].started.wait()), 5)
        running = [j for j in (await stores[0].dump())["jobs"] if j["state"] == "running"]
        assert [(j["workspace"], j["owner"]) for j in running] == [("w", "local0"), ("w", "local1")]
        gates[1].open()
        await asyncio.wait_for(scheds[1].join(), 5)
        scheds[1].adopt("reservations", jobs[0].record, None)  # (a stale view: it is running in 0)
        await asyncio.wait_for(scheds[1].join(), 5)
        gates[0].open()
        await asyncio.wait_for(scheds[0].join(), 5)
        dump = await stores[0].dump()
    finally:
        for sched in scheds:
            await sched.aclose()
        for s in stores:
            await s.close()
    assert [(j["state"], j["owner"], j["attempts"]) for j in dump["jobs"]] == [
        ("succeeded", "local0", 1), ("succeeded", "local1", 1)]
    assert scheds[1].taken_elsewhere == 1
    a, b = dump["jobs"]
    assert a["start"] < b["end"] and b["start"] < a["end"], "the two runs of w overlapped"
    assert dump["history"] == []  # no store lane was ever claimed


class FailingClaims(LanesOverMemory):
    """Memory lanes whose claims raise while ``down`` (a store gone away)."""

    down = True

    def claim(self, workspace, owner):
        if FailingClaims.down:
            raise StoreError("connection lost: server closed the connection")
        return self.inner.claim(workspace, owner)


async def test_a_claim_that_raises_leaves_the_job_waiting_and_counted():
    FailingClaims.down = True
    hub = EventHub()
    sched = Scheduler(lanes=FailingClaims, events=hub, clock=time.monotonic)
    seen = []
    sched.subscribe(seen.append)
    try:
        jid = await sched.reservations.submit("w", None)
        await sched.cafe.submit("w", None)
        assert sched.claim_errors >= 1
        assert [e.kind for e in seen if e.kind == "claim_failed"]
        assert sched.job(jid).phase == "waiting"
        assert len(sched.scheduled_lanes) == 0 and len(sched.reservations.lanes) == 0
        FailingClaims.down = False
        sched.kick()
        await asyncio.wait_for(sched.join(), 5)
        assert sched.job(jid).state == "succeeded"
        assert sched.counts().jobs_finished == 2
    finally:
        FailingClaims.down = False
        await sched.aclose()
    assert sched.idle_clean() == []


@pytest.mark.parametrize("which", ["first", "second"])
async def test_a_failing_claim_gives_back_the_lane_already_claimed(which):
    class SecondFails(LanesOverMemory):
        def claim(self, workspace, owner):
            if self.name == ("scheduled" if which == "second" else "reservations") and not ok:
                raise StoreError("connection lost")
            return self.inner.claim(workspace, owner)

    ok = False
    sched = Scheduler(lanes=SecondFails)
    try:
        jid = await sched.reservations.submit("w", None)
        assert sched.claim_errors == 1
        assert len(sched.reservations.lanes) == 0 and len(sched.scheduled_lanes) == 0
        ok = True
        sched.kick("w")
        await asyncio.wait_for(sched.join(), 5)
        assert sched.job(jid).state == State.SUCCEEDED.value
    finally:
        await sched.aclose()


async def test_waiting_on_others_is_true_only_for_a_job_behind_another_holders_lane(request):
    """A job waiting behind this scheduler's own running job of its workspace is started by
    its own release (False); one whose workspace another session holds waits on news (True)."""
    first, second = await _sessions(request, 2)
    mine, theirs = _scheduler(first, "agent0"), _scheduler(second, "agent1")
    try:
        a, b, c = await first.submit([JobSpec("w", "reservations")] * 3)
        queued = {j.record.id: j for j in await first.queued_jobs(["reservations"], 0, 10)}
        gate = GatedWork()
        assert mine.adopt("reservations", queued[a].record, gate)
        await asyncio.wait_for(gate.started.wait(), 10)
        assert not mine.waiting_on_others()                 # nothing waits
        assert mine.adopt("reservations", queued[b].record, SimulatedWork(0.0))
        assert mine.adopted_waiting() == 1
        assert not mine.waiting_on_others()                 # b waits behind a, its own
        assert theirs.adopt("reservations", queued[c].record, SimulatedWork(0.0))
        assert theirs.adopted_waiting() == 1
        assert theirs.waiting_on_others()                   # c waits behind agent0's lane
        gate.open()
        await asyncio.wait_for(mine.join(), 10)
        theirs.kick()
        await asyncio.wait_for(theirs.join(), 10)
        assert not theirs.waiting_on_others()
        assert [j["state"] for j in (await first.dump())["jobs"]] == ["succeeded"] * 3
    finally:
        for sched in (mine, theirs):
            await sched.aclose()
        for s in (first, second):
            await s.close()
