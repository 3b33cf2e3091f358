"""The follower (``lanemon.agents.follow``): a bounded model of a store kept from its change feed.

Fed by real store operations (churn workers in this process, direct backend
calls) on SQLite and PostgreSQL, its snapshot equals what ``dump()`` says once
the feed has settled; runs of one workspace that overlap are flagged and
counted; refused writes appear in its ledger; a lost store is said and
followed again once back. Conditions are waited for (generous limits), never
durations asserted.
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from engines import open_test_store

from lanemon.agents.follow import RECENT, Follower, FollowModel
from lanemon.lanes import Reservation, State
from lanemon.lanes.records import StaleWrite
from lanemon.store.churn import churn
from lanemon.store.sql import open_sql_store
from lanemon.store.sql.backend import JobSpec
from lanemon.store.sql.reads import StoreJob
from lanemon.store.url import StoreError, parse

pytestmark = pytest.mark.asyncio
ENGINES = ["sqlite", "postgresql"]
WAIT_S = 30.0
TERMINAL = {"succeeded", "failed", "cancelled"}


async def _until(cond, limit_s: float = WAIT_S, what: str = "") -> None:
    deadline = time.monotonic() + limit_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {limit_s} s: {what or cond}")
        await asyncio.sleep(0.02)


def _overlapping(jobs: list[dict], now: float) -> set[int]:
    """The runs (from a dump) that intersect another run of their workspace, pair by pair."""
    runs = [j for j in jobs if j["start"] is not None]
    out = set()
    for a in runs:
        for b in runs:
            if a is b or a["workspace"] != b["workspace"]:
                continue
            a1 = a["end"] if a["end"] is not None else float("inf")
            b1 = b["end"] if b["end"] is not None else float("inf")
            if a["start"] < b1 and b["start"] < a1:
                out.add(a["id"])
    return out


def _expected(dump: dict) -> dict:
    jobs = dump["jobs"]
    counts: dict[str, dict[str, int]] = {}
    for j in jobs:
        c = counts.setdefault(j["queue"], {})
        key = "waiting" if j["state"] == "queued" else j["state"]
        c[key] = c.get(key, 0) + 1
    finished = sorted((j for j in jobs if j["state"] in TERMINAL), key=lambda j: (j["end"] or 0, j["id"]))
    return {
        "lanes": sorted((x["workspace"], x["owner"], x["epoch"]) for x in dump["lanes"] if x["lane"] == "scheduled"),
        "counts": counts,
        "waiting": sorted(j["id"] for j in jobs if j["state"] == "queued"),
        "running": sorted(j["id"] for j in jobs if j["state"] == "running"),
        # (as sets: two jobs finishing in one feed batch on PostgreSQL may commit out of end order)
        "recent": {q: set([j["id"] for j in finished if j["queue"] == q][-RECENT:]) for q in counts},
        "runs": sorted(j["id"] for j in jobs if j["state"] in TERMINAL and j["start"] is not None),
        "owners": {j["id"]: j["owner"] for j in jobs if j["start"] is not None},
        "ledger": [(e["writer"], e["job"], e["state"], e["epoch_held"], e["epoch_current"]) for e in dump["ledger"]],
        "busy": {b["workspace"]: (b["reason"],) for b in dump["busy"]},
        "overlaps": len(_overlapping(jobs, dump["now"])),
    }


def _seen(follower: Follower) -> dict:
    snap = follower.snapshot()
    counts = {q: {k: v for k, v in qv.counts.items() if v and k != "submitted"} for q, qv in snap.queues.items()}
    runs = [sp for spans in snap.history.values() for sp in spans]
    going = [sp for spans in snap.running.values() for sp in spans]
    return {
        "lanes": sorted((x.workspace, x.owner, x.epoch) for x in snap.scheduled),
        "counts": {q: c for q, c in counts.items() if c},
        "waiting": sorted(j.id for qv in snap.queues.values() for j in qv.waiting),
        "running": sorted(j.id for qv in snap.queues.values() for j in qv.running),
        "recent": {q: {j.id for j in qv.recent} for q, qv in snap.queues.items() if any(counts[q].values())},
        "runs": sorted(sp.job_id for sp in runs),
        "owners": {sp.job_id: sp.owner for sp in runs + going},
        "ledger": [(e.writer, e.job_id, e.state, e.epoch_held, e.epoch_current)
                   for e in reversed(follower.ledger().rows)],
        "busy": dict(snap.occupancy),
        "overlaps": snap.overlaps,
    }


async def _settled(follower: Follower, store) -> dict:
    """Wait until the follower shows what the store's dump says (the feed settled)."""
    box: dict = {}

    async def same() -> bool:
        box["want"] = _expected(await store.dump())
        box["seen"] = _seen(follower)
        return box["want"] == box["seen"]

    deadline = time.monotonic() + WAIT_S
    while not await same():
        if time.monotonic() > deadline:
            assert box["seen"] == box["want"]
        await asyncio.sleep(0.05)
    return box["seen"]


async def _following(url: str) -> tuple[Follower, asyncio.Task]:
    follower = Follower(url, wait_s=0.05, sessions_s=0.2, retry_s=0.1)
    await follower.connect()
    return follower, asyncio.ensure_future(follower.run())


async def _stop(follower: Follower, task: asyncio.Task) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert follower.store is None          # run() let go of its session and feed


@pytest.mark.parametrize("engine", ENGINES)
async def test_the_followers_snapshot_equals_the_dump_after_real_store_operations(request, engine):
    store = await open_test_store(request, engine, lease=5)
    url = store.url.text
    follower, task = await _following(url)
    try:
        assert follower.full_reads == 1 and follower.connected
        wss = ("w0", "w1", "w2")
        ids = await store.submit([JobSpec(workspace=wss[i % 3], queue=("reservations", "cafe")[i % 2])
                                  for i in range(30)])
        # two churn workers (real sessions of this process) run the first 20 jobs over store lanes
        shared = [(i, wss[(i - ids[0]) % 3]) for i in ids[:20]]
        await asyncio.gather(churn(url, jobs=shared, name="agent-a", seed=1),
                             churn(url, jobs=shared, name="agent-b", seed=2))
        # a lane held, a busy workspace, a refused write in the ledger
        lanes = store.lanes("scheduled", clock=time.monotonic, emit=None)
        records = store.records(writer="zombie")
        held = await lanes.aclaim("w9", "reservations#999")
        await store.mark_busy("w8", "editing")
        rec = Reservation(id=ids[25], workspace="w1", queue="cafe", state=State.RUNNING, created_at=0.0,
                          updated_at=0.0)
        token = await lanes.aclaim("w1", f"cafe#{ids[25]}")
        await lanes.arevoke("w1")
        with pytest.raises(StaleWrite):
            await records.save(rec, fence=(token,))
        seen = await _settled(follower, store)
        assert len(seen["runs"]) == 20          # (owners: the churn sessions' ids, as the dump says)
        assert {o.rsplit(":", 1)[1] for o in seen["owners"].values()} <= {"agent-a", "agent-b"}
        assert seen["ledger"] == [("zombie", ids[25], "running", token.epoch, None)]
        assert seen["lanes"] == [("w9", "reservations#999", held.epoch)]
        assert seen["busy"] == {"w8": ("editing",)}
        assert seen["overlaps"] == 0                       # store lanes: never two runs at once
        snap = follower.snapshot()
        assert snap.holders["w9"].agent == "test" and snap.holders["w9"].lease_until > snap.at
        await _until(lambda: follower.snapshot().agents == ("test",), what="the churn sessions closed")
        assert follower.full_reads == 1                     # every change since came from the feed
        # then only changes: a release, a clear, more submitted
        await lanes.arelease(held)
        await store.clear_busy("w8")
        await store.submit([JobSpec(workspace="w3", queue="cafe")])
        await _settled(follower, store)
        assert follower.full_reads == 1
    finally:
        await _stop(follower, task)
        await store.close()


@pytest.mark.parametrize("engine", ENGINES)
async def test_runs_of_one_workspace_that_overlap_are_flagged_counted_and_say_who_ran_them(request, engine):
    store = await open_test_store(request, engine)
    follower, task = await _following(store.url.text)
    try:
        # two processes with their own (local) lanes: unfenced running saves of one workspace
        a, b = store.records(writer="agent-a"), store.records(writer="agent-b")
        ids = await store.submit([JobSpec(workspace="W", queue="reservations"),
                                  JobSpec(workspace="W", queue="cafe"),
                                  JobSpec(workspace="V", queue="cafe")])
        recs = {i: await a.load(i) for i in ids}
        await a.save(recs[ids[0]]._replace(state=State.RUNNING))
        await b.save(recs[ids[1]]._replace(state=State.RUNNING))
        await b.save(recs[ids[2]]._replace(state=State.RUNNING))   # alone in V
        await _until(lambda: follower.snapshot().overlaps == 2 and "V" in follower.snapshot().running,
                     what="two overlapping runs and V's run")
        snap = follower.snapshot()
        spans = {sp.job_id: sp for sp in snap.running["W"]}
        assert {i: (sp.owner, sp.overlap) for i, sp in spans.items()} == {ids[0]: ("agent-a", True),
                                                                          ids[1]: ("agent-b", True)}
        assert [(sp.owner, sp.overlap) for sp in snap.running["V"]] == [("agent-b", False)]
        assert snap.max_at_once == 2
        await a.save(recs[ids[0]]._replace(state=State.SUCCEEDED))
        await b.save(recs[ids[1]]._replace(state=State.FAILED, error="boom"))
        seen = await _settled(follower, store)
        assert seen["overlaps"] == 2                    # finished, they still intersected
        snap = follower.snapshot()
        assert [(sp.job_id, sp.state, sp.overlap) for sp in snap.history["W"]] == sorted(
            [(ids[0], "succeeded", True), (ids[1], "failed", True)],
            key=lambda t: [sp.job_id for sp in snap.history["W"]].index(t[0]))
        # a later run of W after both ended overlaps nothing
        (later,) = await store.submit([JobSpec(workspace="W", queue="cafe")])
        rec = await a.load(later)
        await a.save(rec._replace(state=State.RUNNING))
        await a.save(rec._replace(state=State.SUCCEEDED))
        seen = await _settled(follower, store)
        assert seen["overlaps"] == 2 and not {sp.job_id: sp.overlap for sp in follower.snapshot().history["W"]}[later]
    finally:
        await _stop(follower, task)
        await store.close()


async def test_a_deleted_sqlite_store_is_said_and_followed_again_once_it_is_back(tmp_path):
    path = tmp_path / "store.db"
    url = "sqlite:///" + str(path).lstrip("/")
    store = await open_sql_store(parse(url), create=True, name="test")
    await store.submit([JobSpec(workspace="w0", queue="cafe")])
    await store.close()
    changes: list[bool] = []
    follower = Follower(url, wait_s=0.05, retry_s=0.05)
    follower.on_change = lambda: changes.append(follower.connected)
    await follower.connect()
    task = asyncio.ensure_future(follower.run())
    try:
        assert follower.snapshot().counts.jobs_submitted == 1
        _remove(path)
        await _until(lambda: not follower.connected and follower.problem, what="the loss said")
        assert "does not exist" in follower.problem or "replaced" in follower.problem
        assert not task.done()                               # it keeps running
        store = await open_sql_store(parse(url), create=True, name="test")
        try:
            await store.submit([JobSpec(workspace="w1", queue="cafe"), JobSpec(workspace="w2", queue="cafe")])
            await _until(lambda: follower.connected and follower.snapshot().counts.jobs_submitted == 2,
                         what="followed again")
            assert follower.problem is None and follower.full_reads == 2
        finally:
            await store.close()
    finally:
        await _stop(follower, task)


async def test_a_postgresql_store_whose_connections_were_cut_is_followed_again(request):
    import psycopg

    store = await open_test_store(request, "postgresql")
    url = store.url
    await store.submit([JobSpec(workspace="w0", queue="cafe")])
    await store.close()
    follower, task = await _following(url.text)
    try:
        assert follower.snapshot().counts.jobs_submitted == 1
        async with await psycopg.AsyncConnection.connect(url.dsn, autocommit=True) as admin:
            await admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        again = await open_sql_store(url, name="test")
        try:
            await again.submit([JobSpec(workspace="w1", queue="cafe")])
            await _until(lambda: follower.connected and follower.snapshot().counts.jobs_submitted == 2,
                         what="followed again after the cut")
            assert follower.full_reads >= 2 and not task.done()
        finally:
            await again.close()
    finally:
        await _stop(follower, task)


def _remove(path) -> None:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(str(path) + suffix):
            os.remove(str(path) + suffix)


@pytest.mark.parametrize("text, words", [
    ("nonsense", "not a store URL"),
    ("memory:", "own simulation"),
    ("sqlite:///nowhere/at/all.db", "does not exist"),
])
async def test_a_bad_or_unreachable_url_is_refused_with_one_line(text, words):
    with pytest.raises(StoreError, match=words):
        follower = Follower(text)
        await follower.connect()


async def test_an_unreachable_postgresql_server_is_refused_without_its_password():
    follower = Follower("postgresql://me:secret@127.0.0.1:1/db?connect_timeout=2")
    with pytest.raises(StoreError) as info:
        await follower.connect()
    assert "secret" not in str(info.value) and follower.store is None


def _job(i: int, state: str, ws: str, start: float | None = None, end: float | None = None) -> StoreJob:
    return StoreJob(id=i, workspace=ws, queue="cafe", state=state, run_id=None, error=None, attempts=1,
                    created_at=0.0, started=start, ended=end, owner="a", epoch=None, seconds=0.0, cpu_ms=0.0,
                    fail=False)


async def test_the_model_stays_bounded_with_ten_thousand_finished_jobs_and_keeps_complete_counts():
    model = FollowModel(runs_total=500)
    n = 12_000
    for k in range(0, n, 1000):   # queued, then running, then finished, in batches as the feed gives them
        batch = range(k + 1, k + 1001)
        model.apply_jobs(batch, [_job(i, "queued", f"w{i % 300}") for i in batch])
        model.apply_jobs(batch, [_job(i, "running", f"w{i % 300}", start=float(i)) for i in batch])
        model.apply_jobs(batch, [_job(i, "succeeded", f"w{i % 300}", start=float(i), end=i + 0.5)
                                 for i in batch])
    snap = model.snapshot(float(n + 1))
    qv = snap.queues["cafe"]
    assert qv.counts["submitted"] == n and qv.counts["succeeded"] == n and qv.counts["running"] == 0
    assert len(qv.recent) == RECENT and qv.recent[-1].id == n
    assert sum(len(s) for s in snap.history.values()) <= 500
    assert model.live_jobs() == 0 and snap.overlaps == 0 and snap.max_at_once == 1
    # a finished job reported again (a late feed row) is not counted twice
    model.apply_jobs([n], [_job(n, "succeeded", f"w{n % 300}", start=float(n), end=n + 0.5)])
    assert model.snapshot(0.0).queues["cafe"].counts["succeeded"] == n


async def test_the_scheduled_lanes_kept_between_snapshots_equal_a_fresh_models():
    """The held ``scheduled`` lanes' views and holders are kept between snapshots and made again
    only for a lane whose row or agent's name changed: after each of many seeded batches of
    claims, releases, other lanes' changes and session renames, they equal those of a model
    made from scratch with the same rows."""
    import random
    from types import SimpleNamespace

    from lanemon.store.sql.backend import LaneRow

    rng = random.Random(19)
    model = FollowModel()
    rows: dict[str, LaneRow] = {}
    sessions = {f"h:1:{i}:agent-{i}": f"agent-{i}" for i in range(3)}
    model.set_sessions([SimpleNamespace(session=s, name=n) for s, n in sessions.items()])
    epoch = 0
    for step in range(300):
        keys = []
        for _ in range(rng.randint(0, 6)):
            name = rng.choice(["scheduled", "scheduled", "reservations"])
            key = f"{name}:w{rng.randint(0, 19)}"
            keys.append(key)
            if key in rows and rng.random() < 0.5:
                del rows[key]                      # released
            else:
                epoch += 1
                ws = key.split(":", 1)[1]
                rows[key] = LaneRow(name, ws, f"owner-{epoch}", rng.choice(list(sessions)), epoch,
                                    float(epoch), epoch + 10.0, rng.random() < 0.1, None)
        model.apply_lanes(keys, [rows[k] for k in keys if k in rows])
        if step % 37 == 5:                         # an agent renamed: every holder's name may change
            s = rng.choice(list(sessions))
            sessions[s] = f"{sessions[s]}'"
            model.set_sessions([SimpleNamespace(session=k, name=n) for k, n in sessions.items()])
        fresh = FollowModel()
        fresh.set_sessions([SimpleNamespace(session=k, name=n) for k, n in sessions.items()])
        fresh.apply_lanes(list(rows), list(rows.values()))
        got, want = model.snapshot(now=float(step)), fresh.snapshot(now=float(step))
        assert got.scheduled == want.scheduled, step
        assert dict(got.holders) == dict(want.holders), step
    assert len(model.snapshot(now=0.0).scheduled) == sum(1 for k in rows if k.startswith("scheduled:"))
