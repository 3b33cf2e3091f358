"""The SQL engines' own rules: leases, the lost owner's job, the ledger, store-wide counts.

Each test opens two sessions on one store (two processes' worth: separate
connections, separate session ids) and moves one session's clock with
``clock_skew`` instead of sleeping: the store judges every lease by the clock
of the transaction that decides.
"""

from __future__ import annotations

import asyncio

import pytest
from engines import open_test_store

from lanemon.lanes import Reservation, StaleWrite, State
from lanemon.store.sql.backend import MAX_ATTEMPTS, JobSpec

pytestmark = [pytest.mark.asyncio, pytest.mark.parametrize("engine", ["sqlite", "postgresql"])]

LEASE = 2.0


def _clock():
    return 0.0


async def _sessions(request, engine):
    a = await open_test_store(request, engine, lease=LEASE)
    b = await open_test_store(request, engine, lease=LEASE)
    return a, b


def _running(rec: Reservation, token) -> Reservation:
    return rec._replace(state=State.RUNNING, run_id=f"run-{token.epoch}", attempts=rec.attempts + 1,
                        epoch=token.epoch)


async def test_a_lane_whose_lease_ran_out_goes_to_the_next_claimer_and_its_job_is_requeued(request, engine):
    a, b = await _sessions(request, engine)
    try:
        (jid,) = await a.submit([JobSpec(workspace="W", queue="reservations", seconds=1.0)])
        lanes_a, lanes_b = a.lanes("scheduled", clock=_clock, emit=None), b.lanes("scheduled", clock=_clock, emit=None)
        rec_a = a.records()
        old = await lanes_a.aclaim("W", "A#1")
        queued = await rec_a.load(jid)
        assert queued.state is State.QUEUED and queued.attempts == 0
        await rec_a.save(_running(queued, old), fence=(old,))
        assert await lanes_b.aclaim("W", "B#1") is None  # held, lease alive
        b.backend.clock_skew = LEASE - 0.2
        assert await lanes_b.aclaim("W", "B#1") is None  # still alive (by the store's clock)
        b.backend.clock_skew = LEASE + 0.1
        new = await lanes_b.aclaim("W", "B#1")
        assert new is not None and new.epoch > old.epoch

        dumped = await b.dump()
        job = dumped["jobs"][0]
        # the lost owner's job went back to the queue, attempts kept
        assert job["state"] == "queued" and job["attempts"] == 1 and job["epoch"] is None
        assert "lease expired" in job["error"]
        history = {h["epoch"]: h for h in dumped["history"]}
        assert history[old.epoch]["end_reason"] == "expired" and history[new.epoch]["ended_at"] is None
        assert dumped["stats"]["lease_expired"] == 1 and dumped["stats"]["requeued"] == 1

        # the old owner wakes up: its final save is refused and kept in the ledger
        with pytest.raises(StaleWrite):
            await rec_a.save(_running(queued, old)._replace(state=State.SUCCEEDED), fence=(old,))
        assert rec_a.stale_writes == 1
        # its late release changes nothing and is counted store-wide
        assert await lanes_a.arelease(old) is False
        dumped = await b.dump()
        (entry,) = dumped["ledger"]
        assert (entry["job"], entry["state"], entry["epoch_held"], entry["epoch_current"]) == \
            (jid, "succeeded", old.epoch, new.epoch)
        assert entry["writer"] == a.session and entry["lane"] == "scheduled"
        assert dumped["stale_releases"] == 1 and dumped["lanes"][0]["epoch"] == new.epoch
        assert dumped["jobs"][0]["state"] == "queued"
    finally:
        await a.close()
        await b.close()


async def test_a_job_whose_owners_keep_dying_ends_failed_owner_died(request, engine):
    a, b = await _sessions(request, engine)
    try:
        (jid,) = await a.submit([JobSpec(workspace="W", queue="cafe", cpu_ms=5)])
        lanes_a = a.lanes("scheduled", clock=_clock, emit=None)
        rec_a = a.records()
        for attempt in range(1, MAX_ATTEMPTS + 1):
            token = await lanes_a.aclaim("W", f"A#{attempt}")
            assert token is not None
            rec = await rec_a.load(jid)
            assert rec.state is State.QUEUED and rec.attempts == attempt - 1
            await rec_a.save(_running(rec, token), fence=(token,))
            b.backend.clock_skew += LEASE + 1  # b sees the lease run out ...
            a.backend.clock_skew += LEASE + 1  # ... and so does a's next claim
            await b.backend.reap()
        dumped = await b.dump()
        job = dumped["jobs"][0]
        assert job["state"] == "failed" and job["error"] == "owner died" and job["attempts"] == MAX_ATTEMPTS
        assert job["end"] is not None
        assert dumped["stats"]["requeued"] == MAX_ATTEMPTS - 1 and dumped["stats"]["owner_died"] == 1
    finally:
        await a.close()
        await b.close()


async def test_the_owner_that_renews_keeps_its_lane(request, engine):
    a, b = await _sessions(request, engine)
    try:
        lanes_a, lanes_b = a.lanes("cafe", clock=_clock, emit=None), b.lanes("cafe", clock=_clock, emit=None)
        token = await lanes_a.aclaim("W", "A#1")
        for _ in range(5):  # time passes, a renews each time (as its keeper does)
            a.backend.clock_skew += LEASE * 0.6
            b.backend.clock_skew += LEASE * 0.6
            assert await a.backend.renew() == 1
            assert await b.backend.reap() == []
            assert await lanes_b.aclaim("W", "B#1") is None
        assert await lanes_a.arelease(token) is True
        assert await lanes_b.aclaim("W", "B#1") is not None
    finally:
        await a.close()
        await b.close()


async def test_stale_and_repeated_releases_are_counted_by_the_store_and_never_raise(request, engine):
    a, b = await _sessions(request, engine)
    try:
        lanes_a, lanes_b = a.lanes("scheduled", clock=_clock, emit=None), b.lanes("scheduled", clock=_clock, emit=None)
        token = await lanes_a.aclaim("W", "A#1")
        assert await lanes_a.arelease(token) is True
        assert await lanes_a.arelease(token) is False
        theirs = await lanes_b.aclaim("W", "B#1")
        assert await lanes_a.arelease(token) is False  # a late release never frees the new owner's lane
        dumped = await a.dump()
        assert dumped["stale_releases"] == 2 and [lane["epoch"] for lane in dumped["lanes"]] == [theirs.epoch]
        assert lanes_a.stale_releases == 2 and lanes_b.stale_releases == 0
    finally:
        await a.close()
        await b.close()


async def test_a_revoked_owners_writes_are_refused_and_in_the_ledger(request, engine):
    a, b = await _sessions(request, engine)
    try:
        (jid,) = await a.submit([JobSpec(workspace="W", queue="reservations", seconds=0.1)])
        lanes_a = a.lanes("scheduled", clock=_clock, emit=None)
        rec_a = a.records(writer="agent-a")
        token = await lanes_a.aclaim("W", "A#1")
        rec = await rec_a.load(jid)
        await rec_a.save(_running(rec, token), fence=(token,))
        revoked = await b.lanes("scheduled", clock=_clock, emit=None).arevoke("W")
        assert revoked.epoch == token.epoch
        with pytest.raises(StaleWrite):
            await rec_a.save(_running(rec, token)._replace(state=State.FAILED, error="x"), fence=(token,))
        dumped = await a.dump()
        assert [(e["writer"], e["epoch_held"], e["epoch_current"]) for e in dumped["ledger"]] == \
            [("agent-a", token.epoch, None)]
        assert dumped["jobs"][0]["state"] == "running" and dumped["jobs"][0]["owner"] == "agent-a"
        assert dumped["stats"]["revoked"] == 1 and dumped["stats"]["stale_writes"] == 1
        assert {h["epoch"]: h["end_reason"] for h in dumped["history"]} == {token.epoch: "revoked"}
    finally:
        await a.close()
        await b.close()


async def test_outside_occupancy_is_checked_inside_the_claim(request, engine):
    a, b = await _sessions(request, engine)
    try:
        lanes_a = a.lanes("scheduled", clock=_clock, emit=None)
        queue_b = b.lanes("cafe", clock=_clock, emit=None)
        held = await lanes_a.aclaim("H", "A#1")
        assert await b.mark_busy("W", "a user edits it") is True
        assert await b.mark_busy("W", "still editing") is False
        assert await b.mark_busy("H", "outside") is True  # a held lane is not taken away ...
        assert await lanes_a.aclaim("W", "A#2") is None   # ... but no lane of a busy workspace is granted
        assert await queue_b.aclaim("W", "B#1") is None
        assert await lanes_a.arelease(held) is True
        assert await lanes_a.aclaim("H", "A#3") is None
        dumped = await a.dump()
        assert [(o["workspace"], o["reason"]) for o in dumped["busy"]] == \
            [("H", "outside"), ("W", "still editing")]
        assert dumped["stats"]["busy_refusals"] == 3
        assert await a.clear_busy("W") is True and await a.clear_busy("W") is False
        assert await queue_b.aclaim("W", "B#1") is not None
    finally:
        await a.close()
        await b.close()


async def test_cancel_of_another_process_job_says_elsewhere_and_leaves_it_alone(request, engine):
    """On a shared store ``cancel`` of an ID not live here: another process's job not over is
    "elsewhere" (it was "finished", and nothing was cancelled either), left as it is; once it
    is over, "finished"; an ID no process was given, "unknown"."""
    from lanemon.lanes import EventHub, GatedWork, Scheduler

    a, b = await _sessions(request, engine)
    try:
        mine, other = (Scheduler(lanes=st.lanes, store=st.records(events=hub), events=hub)
                       for st, hub in ((a, EventHub()), (b, EventHub())))
        gate = GatedWork()
        running = await other.submit("reservations", "w1", gate)
        queued = await other.submit("reservations", "w1", 0.0)      # waits behind it, in the other
        await gate.started.wait()
        said = [await mine.cancel(running), await mine.cancel(queued), await mine.cancel(10**9)]
        states = [(await a.records().load(i)).state for i in (running, queued)]
        gate.open()
        await other.join()
        said.append(await mine.cancel(running))
        for s in (mine, other):
            await s.aclose()
    finally:
        await a.close()
        await b.close()
    assert said == ["elsewhere", "elsewhere", "unknown", "finished"]
    assert states == [State.RUNNING, State.QUEUED]


async def test_a_negative_or_odd_count_of_ids_is_refused_and_moves_nothing(request, engine):
    a, b = await _sessions(request, engine)
    try:
        first = await a.records().reserve_ids(3)
        for bad in (-5, 2.0, True, "3"):
            with pytest.raises(ValueError):
                await b.records().reserve_ids(bad)
        after = await b.records().reserve_ids(2)
    finally:
        await a.close()
        await b.close()
    assert len(first) == 3 and min(after) > max(first)    # the shared counter never went back


async def test_job_ids_come_from_the_store_so_processes_never_share_one(request, engine):
    """Jobs added by the CLI and two schedulers (two processes' worth) on one store get
    distinct ids, and every one of them runs."""
    from lanemon.lanes import EventHub, Scheduler, SimulatedWork

    a, b = await _sessions(request, engine)
    try:
        cli_ids = await a.submit([JobSpec(workspace="W", queue="cafe") for _ in range(3)])
        schedulers = []
        for store in (a, b):
            hub = EventHub()
            schedulers.append(Scheduler(lanes=store.lanes, store=store.records(events=hub), events=hub))
        ids = []
        for i in range(70):  # more than one block of ids (ID_BLOCK) for the first scheduler
            s = schedulers[0] if i % 7 else schedulers[1]
            ids.append(await s.submit("reservations", f"w{i % 5}", SimulatedWork(0)))
        # (a lane the other scheduler gives back comes without a notice: look again, as the window does)
        retries = [asyncio.ensure_future(s.retry_waiting(0.01)) for s in schedulers]
        for s in schedulers:
            await s.join()
        for r in retries:
            r.cancel()
        await asyncio.gather(*retries, return_exceptions=True)
        assert len(set(ids)) == len(ids) and not set(ids) & set(cli_ids)
        dumped = await a.dump()
        states = {j["id"]: j["state"] for j in dumped["jobs"]}
        assert all(states[i] == "succeeded" for i in ids)
        assert [states[i] for i in cli_ids] == ["queued"] * 3 and dumped["stats"]["invalid_transitions"] == 0
        for s in schedulers:
            await s.aclose()
    finally:
        await a.close()
        await b.close()
