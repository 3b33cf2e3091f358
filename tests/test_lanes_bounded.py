"""Hours of use: the lanes domain keeps a bounded window of finished history.

Tens of thousands of zero-time jobs go through both queues over many
workspaces; the record store, the invariant checker and the scheduler's
history stay at or under their bounds (read through their public ``stats()``),
the views' data (the newest runs, each workspace's last run, the recent jobs)
is all still there, and the checker still catches deliberately injected
violations after its window rolled over.  The memory check compares traced
allocations after N and 10N jobs (no timing).
"""

from __future__ import annotations

import asyncio
import gc
import random
import tracemalloc

import pytest

from lanemon.lanes import (
    HISTORY_TOTAL,
    KEEP_FINISHED,
    GatedWork,
    InvariantChecker,
    RecordStore,
    Reservation,
    Scheduler,
    State,
)
from lanemon.lanes.invariants import KEEP_FINISHED_IDS
from lanemon.lanes.records import InvalidTransition

BOUNDS = dict(keep_finished=500, recent_limit=20, history_limit=5, history_total=300)
CHECKER_KEEP = 200
WORKSPACES = [f"w{i:03d}" for i in range(400)]
BATCH = 250   # jobs submitted before the scheduler is drained (live jobs stay bounded)


async def push(s: Scheduler, jobs: int, rng: random.Random, after_batch=None) -> None:
    """``jobs`` zero-time jobs in batches over WORKSPACES, in either queue."""
    for start in range(0, jobs, BATCH):
        for _ in range(min(BATCH, jobs - start)):
            await s.submit(rng.choice(("reservations", "cafe")), rng.choice(WORKSPACES))
        await s.join()
        if after_batch is not None:
            after_batch()


def test_default_bounds_are_named_and_finite():
    s = Scheduler()
    assert s.store.keep_finished == KEEP_FINISHED and s.history_total == HISTORY_TOTAL
    assert InvariantChecker(s).keep_finished == KEEP_FINISHED_IDS
    assert 0 < KEEP_FINISHED_IDS <= KEEP_FINISHED and s.recent_limit <= KEEP_FINISHED
    with pytest.raises(ValueError):
        Scheduler(history_total=0)
    with pytest.raises(ValueError):
        RecordStore(keep_finished=-1)


def test_the_store_forgets_only_the_oldest_terminal_records():
    async def go():
        st = RecordStore(keep_finished=2)
        rec = lambda i, state: Reservation(i, "w", "q", state, 0.0, 0.0)  # noqa: E731
        for i in range(1, 6):
            await st.save(rec(i, State.QUEUED))
        for i in (1, 2):
            await st.save(rec(i, State.RUNNING))
        for i in (2, 1, 3):  # become terminal in this order: 2 is the oldest
            await st.save(rec(i, State.CANCELLED))
        kept = {i: (r.state if (r := st.get(i)) else None) for i in range(1, 6)}
        # a forgotten record is gone; a write for its ID is a new record's (only queued)
        with pytest.raises(InvalidTransition):
            await st.save(rec(2, State.SUCCEEDED))
        return kept, st.stats()

    kept, stats = asyncio.run(go())
    assert kept == {1: State.CANCELLED, 2: None, 3: State.CANCELLED, 4: State.QUEUED,
                    5: State.QUEUED}
    assert stats == {"records": 4, "finished": 2, "keep_finished": 2, "forgotten": 1}


def test_twenty_thousand_jobs_stay_within_the_bounds_and_the_views_lose_nothing():
    async def go():
        s = Scheduler(**BOUNDS)
        chk = InvariantChecker(s, keep_finished=CHECKER_KEEP)
        last_run: dict[str, int] = {}   # workspace -> its last finished job, from the events
        runs: list[tuple] = []          # every run (job, queue, workspace), in the order they ended

        def on_event(ev) -> None:
            if ev.kind == "finished" and ev.detail:  # a run ended
                last_run[ev.workspace] = ev.job_id
                runs.append((ev.job_id, ev.queue, ev.workspace))

        s.subscribe(on_event)
        seen: list[dict] = []

        def sizes() -> None:
            st = s.stats()
            seen.append(dict(sched=st, checker=chk.stats(), store=s.store.stats()))

        await push(s, 20_000, random.Random(7), sizes)
        return s, chk, seen, last_run, runs

    s, chk, seen, last_run, runs = asyncio.run(go())
    assert chk.check() == [] and chk.runs == 20_000 and chk.max_active == 1
    assert s.counts().jobs_finished == 20_000
    for i, st in enumerate(seen):
        sched, checker, store = st["sched"], st["checker"], st["store"]
        assert sched["live"] == 0 and sched["recent"] <= 2 * BOUNDS["recent_limit"], (i, st)
        assert sched["history_runs"] - sched["history_uncounted"] <= BOUNDS["history_total"], (i, st)
        assert sched["history_uncounted"] <= len(WORKSPACES), (i, st)
        assert store["records"] <= BOUNDS["keep_finished"] and store["finished"] <= BOUNDS["keep_finished"]
        assert checker["live"] == 0 and checker["workspaces"] == 0 and checker["active"] == 0
        assert checker["finished_ids"] <= CHECKER_KEEP
    assert seen[-1]["store"]["forgotten"] == 20_000 - BOUNDS["keep_finished"]
    # what the views read is all there: each workspace's last run (its table's
    # "last run"), the newest runs overall (the timeline) and the newest jobs of
    # each queue (its table's recent rows)
    snap = s.snapshot()
    assert {ws: spans[-1].job_id for ws, spans in snap.history.items()} == last_run
    kept = {sp.job_id for spans in snap.history.values() for sp in spans}
    newest = runs[-BOUNDS["history_total"]:]
    per_ws_newest = {}
    for jid, _q, ws in reversed(newest):   # what history_limit lets each workspace show
        if len(per_ws_newest.setdefault(ws, [])) < BOUNDS["history_limit"]:
            per_ws_newest[ws].append(jid)
    assert {j for js in per_ws_newest.values() for j in js} <= kept
    for q, qv in snap.queues.items():
        assert len(qv.recent) == BOUNDS["recent_limit"]
        newest_q = [jid for jid, rq, _ws in runs if rq == q][-BOUNDS["recent_limit"]:]
        assert [j.id for j in qv.recent] == newest_q
    # a cancel of a long-forgotten job still answers "finished", not "no such job"
    assert asyncio.run(s.cancel(1)) == "finished" and s.store.get(1) is None
    assert asyncio.run(s.cancel(20_001)) == "unknown"


def test_the_checker_still_catches_injected_violations_after_its_window_rolled_over():
    async def go():
        s = Scheduler(**BOUNDS)
        chk = InvariantChecker(s, keep_finished=CHECKER_KEEP)
        await push(s, 5_000, random.Random(3))
        assert chk.check() == [] and chk.stats()["finished_ids"] == CHECKER_KEEP
        assert s.store.get(1) is None  # job 1 left the store's window long ago
        clean = list(chk.violations)
        found = {}

        def new() -> list[str]:
            out = chk.violations[len(clean):]
            clean.extend(out)
            return out

        # 1. a job that finished long ago finishes again (forged event)
        s.events.emit("finished", "w000", "cafe", 1, State.SUCCEEDED, True)
        found["finished twice"] = new()
        # 2. two runs of one workspace at once: its lanes are revoked under a running job
        w1 = GatedWork()
        x = await s.submit("reservations", "X", w1)
        await w1.started.wait()
        s.scheduled_lanes.revoke("X")
        s.reservations.lanes.revoke("X")
        w2 = GatedWork()
        y = await s.submit("cafe", "X", w2)
        await w2.started.wait()
        found["two runs"] = new()
        # 3. a stale write gets through: x's record written without its fence
        await s.store.save(s.store.get(x)._replace(state=State.SUCCEEDED, error="late"))
        found["stale write"] = new()
        # 4. lanes released before the final save: a forged finished for a running job
        w3 = GatedWork()
        z = await s.submit("cafe", "Z", w3)
        await w3.started.wait()
        s.events.emit("finished", "Z", "cafe", z, State.SUCCEEDED, True)
        found["early release"] = new()
        for w in (w1, w2, w3):
            w.open()
        await s.join()
        return x, y, z, found

    x, y, z, found = asyncio.run(go())
    assert found["finished twice"] == ["job 1: finished but it is not live"]
    assert found["two runs"] == [f"workspace X: 2 runs at once (job {y})"]
    assert len(found["stale write"]) == 1 and found["stale write"][0].startswith(
        f"job {x}: succeeded record written while its run") and "stale write" in found["stale write"][0]
    assert found["early release"] == [f"job {z}: lanes released before its final record was saved"]


def _traced_after(jobs_total: int, marks: tuple[int, ...]) -> list[int]:
    """Traced bytes still allocated after each mark (jobs pushed so far)."""
    out: list[int] = []

    async def go():
        s = Scheduler(**BOUNDS)
        chk = InvariantChecker(s, keep_finished=CHECKER_KEEP)
        rng = random.Random(11)
        done = 0
        for mark in marks:
            await push(s, mark - done, rng)
            done = mark
            gc.collect()
            out.append(tracemalloc.get_traced_memory()[0])
        assert chk.check() == []

    tracemalloc.start()
    try:
        asyncio.run(go())
    finally:
        tracemalloc.stop()
    return out


def test_memory_after_ten_times_the_jobs_stays_flat():
    """Once the windows are full, 10x the jobs cost no more memory: the traced
    allocations after 2,000 and after 20,000 jobs differ by less than what 2,000
    jobs used to keep (~840 B each when everything was kept forever)."""
    at_n, at_10n = _traced_after(20_000, (2_000, 20_000))
    grown = at_10n - at_n
    assert grown < 2_000 * 840 / 4, (at_n, at_10n, grown)


def test_a_checker_started_late_adopts_the_live_jobs():
    """A checker that subscribes while jobs are live (a view opened late) knows
    them from a snapshot: no false alarm when they finish, and a second run of
    an adopted job's workspace is still caught."""
    async def go():
        s = Scheduler()
        w = GatedWork()
        a = await s.submit("reservations", "A", w)
        b = await s.submit("cafe", "A")
        await w.started.wait()
        chk = InvariantChecker(s)
        adopted = chk.stats()
        s.scheduled_lanes.revoke("A")  # the shared lane goes under a (b's queue lane was free)
        s.kick("A")                    # b starts while a still runs: two runs at once
        await asyncio.sleep(0)
        two = list(chk.violations)
        w.open()
        await s.join()
        return a, b, adopted, two, chk

    a, b, adopted, two, chk = asyncio.run(go())
    assert adopted["live"] == 2 and adopted["active"] == 1
    assert two == [f"workspace A: 2 runs at once (job {b})"]
    assert chk.jobs_finished == 2 and not chk.stats()["live"]


def test_jobs_of_one_workspace_share_the_schedulers_one_name_string():
    """Equal workspace names passed as distinct string objects (a burst names each job's
    workspace anew): every job, record and event of that workspace carries one string
    object, the scheduler's, so waiting jobs keep one name per workspace, not per job."""
    async def main():
        s = Scheduler()
        seen = []
        s.subscribe(lambda ev: seen.append(ev.workspace) if ev.workspace is not None else None)
        names = ["".join(["ws-", str(7)]) for _ in range(5)]       # equal, distinct objects
        assert len({id(n) for n in names}) == 5
        s.mark_busy("ws-7")                    # all five wait (and the name is known first)
        ids = [await s.submit("reservations", n, GatedWork()) for n in names]
        snap = s.snapshot()
        views = [j for q in snap.queues.values() for j in q.waiting]
        records = [s.store.get(i) for i in ids]
        await s.aclose()
        return views, records, seen

    views, records, seen = asyncio.run(main())
    objs = {id(v.workspace) for v in views} | {id(r.workspace) for r in records} | {id(w) for w in seen}
    assert len(views) == 5 and len(records) == 5 and len(objs) == 1


def test_the_invariant_checker_keeps_a_waiting_job_as_its_seq_alone():
    """A job the checker saw only queued costs it an int and a dict entry (traced in its
    module, ~70 bytes), not a 6-list (list and items, ~190 bytes with the int): a burst's
    99,999 waiting jobs; the checks once such a job runs stay the same (other tests)."""
    import lanemon.lanes.invariants as inv

    async def main():
        s = Scheduler()
        checker = InvariantChecker(s)
        s.mark_busy("ws-0")                  # every job waits
        n = 2_000
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            for _ in range(n):
                await s.submit("reservations", "ws-0", GatedWork())
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
        only = [tracemalloc.Filter(True, inv.__file__)]
        grown = sum(st.size_diff for st in after.filter_traces(only).compare_to(
            before.filter_traces(only), "filename"))
        s.clear_busy("ws-0")
        await s.aclose()
        return grown / n, checker.check()

    per_job, problems = asyncio.run(main())
    assert per_job < 110, per_job           # (168 with the list)
    assert problems == []
