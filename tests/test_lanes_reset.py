"""``Scheduler.reset``: every live job ends, every finished one is forgotten, the scheduler
takes jobs again as new (issue 19, finding 9: memory that returns after Reset).

Nothing may keep a finished job once the reset returned: a weak reference to a job's work
(the scheduler keeps it with the job) dies, the store forgets its records, the snapshot,
the counts and ``stats()`` are empty. Refusals: a closed scheduler, a second reset while one
runs, a submit or a hold during a reset.
"""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from lanemon.lanes import (
    GatedWork,
    InvariantChecker,
    ResetRefused,
    Scheduler,
    SchedulerClosed,
)


async def _mixed(s: Scheduler) -> tuple[list[GatedWork], list[int]]:
    """Finished jobs in both queues, two running (gated) and waiting ones behind them."""
    ids = []
    for i in range(30):
        ids.append(await s.submit(("reservations", "cafe")[i % 2], f"ws-{i % 6:02d}"))
    await s.join()
    gates = [GatedWork(), GatedWork()]
    ids.append(await s.submit("reservations", "ws-a", gates[0]))
    ids.append(await s.submit("cafe", "ws-b", gates[1]))
    for _ in range(5):
        ids.append(await s.submit("reservations", "ws-a", GatedWork()))
    await gates[0].started.wait()
    await gates[1].started.wait()
    return gates, ids


def test_reset_ends_the_live_jobs_and_forgets_the_finished_ones():
    async def main():
        s = Scheduler()
        checker = InvariantChecker(s)
        events = []
        s.subscribe(lambda ev: events.append(ev.kind))
        finished_work = GatedWork()
        finished_work.open()
        old_id = await s.submit("reservations", "ws-old", finished_work)
        await s.join()
        finished = weakref.ref(finished_work)
        del finished_work
        gates, ids = await _mixed(s)
        s.mark_busy("ws-busy", "outside")
        assert s.stats()["recent"] > 0 and s.stats()["history_runs"] > 0 and len(s.store) > 0
        assert s.job(old_id) is not None and finished() is not None    # kept before the reset

        ended = await s.reset("reset from a test")

        assert ended == 7                          # 2 running + 5 waiting
        assert s.live_jobs == 0 and not s.resetting and not s.closed
        gc.collect()
        assert finished() is None                  # nothing keeps a finished job
        assert s.job(old_id) is None and s.store.get(old_id) is None and len(s.store) == 0
        st = s.stats()
        assert (st["live"], st["recent"], st["history_runs"], st["history_workspaces"],
                st["records"], st["finished_records"]) == (0, 0, 0, 0, 0, 0)
        assert st["workspaces"] == 1               # ws-busy: busy outside is not history
        snap = s.snapshot()
        assert snap.workspaces == ("ws-busy",) and dict(snap.history) == {}
        assert all(not (qv.waiting or qv.running or qv.recent) for qv in snap.queues.values())
        assert all(qv.counts["submitted"] == 0 and qv.counts["cancelled"] == 0
                   for qv in snap.queues.values())
        n = snap.counts
        assert (n.jobs_submitted, n.jobs_finished, n.stale_releases, n.stale_writes,
                n.failed_saves, n.unsaved_finals) == (0, 0, 0, 0, 0, 0)
        assert events[-1] == "reset" and events.count("finished") >= 30 + 1 + 7
        assert checker.violations == [] and checker.max_active == 0 and checker.jobs_seen == 0
        assert await s.cancel(ids[-1]) == "finished"   # an ID from before is never a new job's

        # it takes jobs again, as new; IDs go on growing
        s.clear_busy("ws-busy", "outside")
        new = await s.submit("reservations", "ws-a")
        await s.join()
        assert new > max(ids) and s.snapshot().counts.jobs_submitted == 1
        assert s.snapshot().counts.jobs_finished == 1
        assert checker.check() == [] and checker.jobs_seen == 1
        await s.aclose()
        for g in gates:
            g.open()

    asyncio.run(main())


def test_reset_refusals():
    async def main():
        s = Scheduler()
        gate = GatedWork()
        await s.submit("reservations", "ws-a", gate)
        await gate.started.wait()
        for _ in range(500):
            await s.submit("reservations", "ws-a")
        first = asyncio.ensure_future(s.reset(batch=50))
        await asyncio.sleep(0)                     # its first turn: jobs being ended
        assert s.resetting
        with pytest.raises(ResetRefused):
            await s.reset()
        with pytest.raises(SchedulerClosed, match="resetting"):
            await s.submit("reservations", "ws-b")
        with pytest.raises(SchedulerClosed):
            s.hold_save(id=1, terminal=True)
        assert await first == 501
        assert await s.submit("reservations", "ws-b") > 501    # open again after it
        await s.join()
        await s.aclose()
        with pytest.raises(SchedulerClosed):
            await s.reset()

    asyncio.run(main())


def test_reset_is_spread_over_loop_turns():
    """A reset of many waiting jobs lets the loop's timers run between batches: a timer
    set before it fires while jobs are still being ended (no timing measured)."""
    async def main():
        s = Scheduler()
        gate = GatedWork()
        await s.submit("reservations", "ws-a", gate)
        await gate.started.wait()
        for _ in range(1_000):
            await s.submit("reservations", "ws-a")
        seen = []
        asyncio.get_running_loop().call_soon(lambda: seen.append(s.live_jobs))
        await s.reset(batch=100)
        assert seen and 0 < seen[0] < 1_001
        assert s.live_jobs == 0

    asyncio.run(main())


def test_a_held_final_save_does_not_keep_a_reset_waiting():
    async def main():
        s = Scheduler()
        gate = GatedWork()
        jid = await s.submit("reservations", "ws-a", gate)
        first = s.hold_save(id=jid, terminal=True)
        await gate.started.wait()
        gate.open()
        await asyncio.wait_for(first.wait_engaged(), 5)   # its final save is held now
        assert s.store.holding(jid)
        assert await asyncio.wait_for(s.reset(), 5) == 1
        assert s.store.holds() == () and s.live_jobs == 0
        # later holds work again (a reset is not a close)
        gate2 = GatedWork()
        jid2 = await s.submit("reservations", "ws-a", gate2)
        hold = s.hold_save(id=jid2, terminal=True)
        gate2.open()
        await asyncio.wait_for(hold.wait_engaged(), 5)
        assert s.store.holding(jid2)
        hold.release()
        await s.join()

    asyncio.run(main())


def test_a_cancelled_reset_forgets_nothing_and_the_jobs_go_on():
    async def main():
        s = Scheduler()
        gate = GatedWork()
        await s.submit("reservations", "ws-a", gate)
        await gate.started.wait()
        for _ in range(2_000):
            await s.submit("cafe", "ws-b", 0.0)
        t = asyncio.ensure_future(s.reset(batch=20))
        await asyncio.sleep(0)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        assert not s.resetting and s.live_jobs > 0
        gate.open()
        await asyncio.wait_for(s.join(), 10)       # what was left waiting went on
        assert s.snapshot().counts.jobs_finished == s.snapshot().counts.jobs_submitted

    asyncio.run(main())


def test_lanes_keep_no_workspace_name_once_no_lane_is_held():
    """A drained burst's lanes (views observed) kept thousands of workspace names in their
    change log until the next ``views()``; now none once the last lane is released."""
    import sys

    from lanemon.lanes import ProjectLanes

    lanes = ProjectLanes("q")
    lanes.views()                                  # observed: claims and releases are logged
    names = ["".join(("ws-", str(i))) for i in range(3_000)]   # distinct objects
    probe = names[1_234]
    base = sys.getrefcount(probe)
    tokens = [lanes.claim(ws, f"q#{i}") for i, ws in enumerate(names)]
    for t in tokens:
        assert lanes.release(t)
    del tokens
    assert sys.getrefcount(probe) == base          # nothing kept the name
    assert lanes.views() == () and len(lanes) == 0
    t = lanes.claim(probe, "q#x")                  # and the views still follow changes
    assert [v.workspace for v in lanes.views()] == [probe]
    lanes.release(t)
    assert lanes.views() == ()


def _lanes_bytes(snapshot) -> int:
    """Traced bytes still allocated from lanemon/lanes/lanes.py."""
    import tracemalloc

    flt = tracemalloc.Filter(True, "*lanemon/lanes/lanes.py")
    return sum(s.size for s in snapshot.filter_traces([flt]).statistics("filename"))


def test_compact_gives_back_the_tables_of_lanes_gone():
    """A dict keeps the room of the most entries it ever held: 3,000 lanes claimed and
    released left their tables (~150 KB); ``compact`` makes them anew and changes nothing
    else (before it existed: AttributeError)."""
    import tracemalloc

    from lanemon.lanes import ProjectLanes

    tracemalloc.start()
    try:
        lanes = ProjectLanes("q")
        lanes.views()                                  # observed: views and the change log too
        tokens = [lanes.claim(f"ws-{i}", f"q#{i}") for i in range(3_000)]
        lanes.views()
        for t in tokens[1:]:
            assert lanes.release(t)
        del t
        keep = tokens[0]
        del tokens
        views = lanes.views()
        before = _lanes_bytes(tracemalloc.take_snapshot())
        lanes.compact()
        after = _lanes_bytes(tracemalloc.take_snapshot())
    finally:
        tracemalloc.stop()
    assert before > 100_000, before                    # (the tables of 3,000 entries)
    assert after < before / 10, (before, after)
    assert lanes.views() == views and len(lanes) == 1 and "ws-0" in lanes
    assert lanes.release(keep) and lanes.views() == ()


def test_reset_compacts_the_lanes():
    """``Scheduler.reset`` after a burst over 2,000 workspaces leaves the lanes' tables at
    the size of what is held (none): before, the memory engine's tables kept their room."""
    import tracemalloc

    async def main():
        s = Scheduler()
        s.snapshot()                                   # views observed, as the window does
        for i in range(2_000):
            await s.submit("reservations", f"ws-{i}")
        s.snapshot()
        await s.join()
        s.snapshot()
        drained = _lanes_bytes(tracemalloc.take_snapshot())
        await s.reset()
        return drained, _lanes_bytes(tracemalloc.take_snapshot())

    tracemalloc.start()
    try:
        drained, after = asyncio.run(main())
    finally:
        tracemalloc.stop()
    assert drained > 100_000, drained                  # (the tables of 2,000 held lanes)
    assert after < drained / 10, (drained, after)


@pytest.mark.parametrize("kwargs", [{"batch": 0}, {"batch": -3}, {"batch": 2.5}, {"batch": True},
                                    {"budget_s": 0}, {"budget_s": -1.0}, {"budget_s": float("nan")}])
def test_a_reset_with_a_batch_or_budget_that_could_not_progress_is_refused_and_does_nothing(kwargs):
    """A batch below 1 never moved on (the reset looped for ever, every submit refused):
    refused before anything is done; the jobs go on."""
    async def main():
        s = Scheduler()
        gate = GatedWork()
        await s.submit("reservations", "ws-a", gate)
        await s.submit("reservations", "ws-a", 0.0)     # waiting behind it
        await gate.started.wait()
        with pytest.raises(ValueError):
            await s.reset(**kwargs)
        assert not s.resetting and s.live_jobs == 2
        gate.open()
        await asyncio.wait_for(s.join(), 5)
        return s.counts().jobs_finished

    assert asyncio.run(main()) == 2


def test_an_id_whose_queued_save_failed_is_still_no_job_after_a_reset():
    """``cancel`` of an ID a submit drew but could not save says "unknown" (no job had it),
    before and after a reset (the reset forgot those IDs and it said "finished")."""
    async def main():
        s = Scheduler()
        done = await s.submit("reservations", "ws-a", 0.0)
        s.fail_next_save(state="queued", error="disk full")
        with pytest.raises(Exception, match="disk full"):
            await s.submit("reservations", "ws-a", 0.0)
        await s.join()
        lost = done + 1                                   # the ID the failed submit drew
        before = await s.cancel(lost)
        await s.reset()
        return before, await s.cancel(lost), await s.cancel(done)

    assert asyncio.run(main()) == ("unknown", "unknown", "finished")
