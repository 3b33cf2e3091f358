"""Who is running (schema version 2): each session's row with its heartbeat and ``info``,
``SqlStore.sessions()``, ``set_info`` written by the keeper's renew, the queued-jobs read,
and (schema version 3) the reservations of queued jobs the agents take -- on both SQL engines."""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3

import pytest
from engines import open_test_store

from lanemon.lanes.records import State
from lanemon.store.sql import open_sql_store
from lanemon.store.sql.backend import SCHEMA_VERSION, STALE_SESSION_LEASES, JobSpec, SessionRow
from lanemon.store.url import StoreError, parse

pytestmark = pytest.mark.asyncio

ENGINES = ["sqlite", "postgresql"]


async def _second(store, name: str, info=None):
    """Another session on the same store (another process's worth)."""
    return await open_sql_store(parse(store.url.text), name=name, info=info)


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_session_is_listed_with_its_info_from_open_and_after_each_renew(request, engine):
    store = await open_test_store(request, engine)
    other = await _second(store, "agent-7", info={"role": "lanes", "jobs_running": 0})
    try:
        rows = await store.sessions()
        assert all(isinstance(r, SessionRow) for r in rows)
        by_name = {r.name: r for r in rows}
        assert set(by_name) == {"test", "agent-7"}
        agent = by_name["agent-7"]
        assert (agent.session, agent.pid, agent.host) == (other.session, os.getpid(), socket.gethostname())
        assert agent.info == {"role": "lanes", "jobs_running": 0}
        assert by_name["test"].info == {}
        assert agent.started <= agent.last_seen

        # set_info is kept in memory: nothing is written until the next renew
        other.set_info({"role": "lanes", "jobs_running": 3, "queues": ["cafe"]})
        assert {r.name: r.info for r in await store.sessions()}["agent-7"]["jobs_running"] == 0
        other.backend.clock_skew = 5.0  # the renew happens 5 s later on the store clock
        await other.backend.renew()
        again = {r.name: r for r in await store.sessions()}["agent-7"]
        assert again.info == {"role": "lanes", "jobs_running": 3, "queues": ["cafe"]}
        assert again.last_seen >= agent.last_seen + 4.9
        assert again.started == agent.started

        # the dump's rows carry it too
        dumped = {s["name"]: s for s in (await store.dump())["sessions"]}
        assert dumped["agent-7"]["info"] == again.info and dumped["agent-7"]["last_seen"] == again.last_seen
    finally:
        await other.close()
    assert [r.name for r in await store.sessions()] == ["test"]  # a closed session leaves the list
    await store.close()


@pytest.mark.parametrize("engine", ENGINES)
async def test_the_keeper_writes_the_info(request, engine):
    store = await open_test_store(request, engine, lease=0.3)
    try:
        store.set_info({"jobs_running": 2})
        store.start_keeper()
        for _ in range(400):
            rows = await store.sessions()
            if rows[0].info == {"jobs_running": 2}:
                break
            await asyncio.sleep(0.01)
        assert rows[0].info == {"jobs_running": 2}
    finally:
        await store.close()


async def test_info_must_be_a_json_object(request):
    store = await open_test_store(request, "sqlite")
    try:
        with pytest.raises(TypeError):
            store.set_info(["not", "a", "dict"])
        with pytest.raises(ValueError):
            store.set_info({"x": float("nan")})
        with pytest.raises(TypeError):
            store.set_info({"x": object()})
    finally:
        await store.close()


async def test_sqlite_drops_a_session_not_renewed_for_some_leases_and_it_comes_back_on_renew(request):
    """SQLite has no lock to tell a dead process: a row not renewed for STALE_SESSION_LEASES
    leases is dropped by any reaper; a paused process that comes back is listed again."""
    store = await open_test_store(request, "sqlite", lease=1.0)
    other = await _second(store, "paused", info={"role": "lanes"})
    try:
        store.backend.clock_skew = STALE_SESSION_LEASES * 1.0 - 0.5
        await store.backend.reap()
        assert {r.name for r in await store.sessions()} == {"test", "paused"}
        store.backend.clock_skew = STALE_SESSION_LEASES * 1.0 + 0.5
        await store.backend.renew()  # (the reaper's own row is never its victim)
        await store.backend.reap()
        assert {r.name for r in await store.sessions()} == {"test"}
        other.backend.clock_skew = store.backend.clock_skew
        await other.backend.renew()
        back = {r.name: r for r in await store.sessions()}["paused"]
        assert back.info == {"role": "lanes"}
    finally:
        await other.close()
        await store.close()


@pytest.mark.parametrize("engine", ENGINES)
async def test_queued_jobs_pages_through_the_queued_jobs_of_the_queues_in_id_order(request, engine):
    store = await open_test_store(request, engine)
    try:
        ids = await store.submit([
            JobSpec("a", "reservations", seconds=0.5), JobSpec("b", "cafe", cpu_ms=20.0),
            JobSpec("c", "reservations", seconds=1.0, fail=True), JobSpec("d", "kitchen"),
            JobSpec("e", "reservations")])
        page = await store.queued_jobs(["reservations", "cafe"], 0, 2)
        assert [j.record.id for j in page] == ids[:2]
        assert [(j.spec.workspace, j.spec.queue, j.spec.seconds, j.spec.cpu_ms, j.spec.fail) for j in page] == [
            ("a", "reservations", 0.5, 0.0, False), ("b", "cafe", 0.0, 20.0, False)]
        assert all(j.record.state is State.QUEUED for j in page)
        rest = await store.queued_jobs(["reservations", "cafe"], page[-1].record.id, 10)
        assert [j.record.id for j in rest] == [ids[2], ids[4]]  # not the kitchen's
        assert rest[0].spec.fail and rest[0].spec.seconds == 1.0
        assert [j.record.id for j in await store.queued_jobs(["cafe"], 0, 10)] == [ids[1]]

        # a job that is no longer queued is not listed
        running = page[0].record._replace(state=State.RUNNING)
        await store.records(writer="t", fenced=False).save(running)
        assert ids[0] not in [j.record.id for j in await store.queued_jobs(["reservations"], 0, 10)]
    finally:
        await store.close()


async def test_a_version_2_store_is_refused_as_older(request, tmp_path):
    """A store made by the lanemon of schema version 2 (no ``jobs.taken_by``) is refused,
    and its refusal says to reset it."""
    assert SCHEMA_VERSION == 3
    store = await open_test_store(request, "sqlite")
    await store.close()
    db = sqlite3.connect(store.url.path)
    db.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="schema version 2, older than this lanemon's .3.*lanemon store reset"):
        await open_sql_store(parse(store.url.text))


def _taken(dump) -> dict[int, str | None]:
    return {j["id"]: j["taken_by"] for j in dump["jobs"]}


@pytest.mark.parametrize("engine", ENGINES)
async def test_take_jobs_reserves_each_queued_job_for_one_session_until_its_lease(request, engine):
    store = await open_test_store(request, engine, lease=2.0)
    other = await _second(store, "b")
    try:
        ids = await store.submit([JobSpec(f"w{i}", ("reservations", "cafe", "kitchen")[i % 3], seconds=i)
                                  for i in range(9)])
        mine = await store.take_jobs(["reservations", "cafe"], 3)
        assert [j.record.id for j in mine] == [ids[0], ids[1], ids[3]]       # lowest ids, not the kitchen's
        assert [j.spec.seconds for j in mine] == [0.0, 1.0, 3.0]
        theirs = await other.take_jobs(["reservations", "cafe"], 10)
        assert [j.record.id for j in theirs] == [ids[4], ids[6], ids[7]]     # not mine again
        assert await store.take_jobs(["reservations", "cafe"], 10) == []     # nothing free (not even my own)
        taken = _taken(await store.dump())
        assert {taken[i] for i in (ids[0], ids[1], ids[3])} == {store.session}
        assert taken[ids[2]] is None

        # a save ends the reservation (and the job is no longer queued)
        running = mine[0].record._replace(state=State.RUNNING, attempts=1)
        await store.records(writer="a", fenced=False).save(running)
        assert _taken(await store.dump())[ids[0]] is None

        # the renew keeps them; past the lease without one, another session takes them
        for s in (store, other):
            s.backend.clock_skew = 1.5
            await s.backend.renew()
        other.backend.clock_skew = 3.0          # 1.5 s after the renews: still held
        assert await other.take_jobs(["reservations", "cafe"], 10) == []
        other.backend.clock_skew = 4.0          # 2.5 s after them: the leases ran out (its own too)
        assert [j.record.id for j in await other.take_jobs(["reservations", "cafe"], 10)] == [
            ids[1], ids[3], ids[4], ids[6], ids[7]]

        # giving back frees them at once; so does closing the session
        assert await other.give_back_jobs() == 5
        store.backend.clock_skew = other.backend.clock_skew = 0.0
        assert [j.record.id for j in await store.take_jobs(["cafe"], 10)] == [ids[1], ids[4], ids[7]]
        await store.backend.close()
        again = await _second(other, "c")
        try:
            assert [j.record.id for j in await again.take_jobs(["reservations", "cafe"], 10)] == [
                ids[1], ids[3], ids[4], ids[6], ids[7]]
        finally:
            await again.close()
    finally:
        await other.close()
        await store.close()


@pytest.mark.parametrize("engine", ENGINES)
async def test_sessions_taking_at_once_never_get_one_job_twice(request, engine):
    store = await open_test_store(request, engine)
    others = [await _second(store, f"s{i}") for i in range(5)]
    try:
        # (one workspace per job: a workspace another session reserved a job of is left to it,
        # and here no job ever runs to end a reservation)
        ids = await store.submit([JobSpec(f"w{i}", "reservations") for i in range(120)])

        async def take_all(session) -> list[int]:
            # until no job is left free: an empty take is not the end (on PostgreSQL a take
            # beside it may hold the first job of every workspace it could pick, for a moment)
            got = []
            while True:
                page = await session.take_jobs(["reservations"], 4)
                got += [j.record.id for j in page]
                if not page and None not in _taken(await session.dump()).values():
                    return got
                await asyncio.sleep(0)

        got = await asyncio.gather(*(take_all(s) for s in others))
        every = [i for g in got for i in g]
        assert sorted(every) == ids                     # each once
        assert sum(1 for g in got if g) >= 2            # (they did take at once)
        taken = _taken(await store.dump())
        assert all(taken[i] == s.session for s, g in zip(others, got) for i in g)
    finally:
        for s in others:
            await s.close()
        await store.close()


TAKER = {"role": "lanes", "lanes": "store"}    # what ``lanemon agent`` registers with


@pytest.mark.parametrize("engine", ENGINES)
async def test_take_jobs_leaves_the_workspaces_another_session_uses(request, engine):
    """Jobs of a workspace whose lane another session holds, or whose jobs another session
    reserved, are not taken (they would wait for that lane), unless this session uses the
    workspace too; once the lane's lease runs out (or the reservations are given back) they are."""
    store = await open_test_store(request, engine, lease=2.0)
    other = await _second(store, "b")
    try:
        ids = await store.submit([JobSpec(ws, "reservations") for ws in ("a", "a", "b", "c", "a", "c", "d")])
        assert [j.record.id for j in await store.take_jobs(["reservations"], 1)] == [ids[0]]   # an "a"
        lanes = store.lanes("scheduled", clock=lambda: 0.0, emit=None)
        assert await lanes.aclaim("c", "me") is not None                                      # "c" held
        theirs = await other.take_jobs(["reservations"], 10)
        assert [j.record.id for j in theirs] == [ids[2], ids[6]]      # not "a" (reserved), not "c" (held)
        mine = await store.take_jobs(["reservations"], 10)
        assert [j.record.id for j in mine] == [ids[1], ids[3], ids[4], ids[5]]   # its own "a" and "c"
        await store.give_back_jobs()
        await other.give_back_jobs()
        other.backend.clock_skew = 3.0      # past the lane's lease: "c" is free again
        assert [j.record.id for j in await other.take_jobs(["reservations"], 10)] == ids
    finally:
        await other.close()
        await store.close()


@pytest.mark.parametrize("engine", ENGINES)
async def test_each_taking_session_reserves_its_fair_share_of_the_workspaces(request, engine):
    """With S live sessions that say they take jobs (``lanemon agent``'s info), a session takes
    jobs from at most ceil(W / S) of the W workspaces with queued jobs, its own first: the first
    to take does not get all the work (the code before: one session reserved every workspace).
    Sessions that say nothing are not counted; a gone one (not seen for the stale leases) neither."""
    store = await open_test_store(request, engine, lease=2.0)
    takers = [await _second(store, f"agent-{i}", info=TAKER) for i in range(3)]
    try:
        wss = [f"w{i}" for i in range(7)]
        ids = await store.submit([JobSpec(wss[i % 7], "reservations") for i in range(28)])   # 4 jobs each
        ws_of = dict(zip(ids, (wss[i % 7] for i in range(28))))

        def workspaces(jobs) -> list[str]:
            return sorted({ws_of[j.record.id] for j in jobs})

        first = await takers[0].take_jobs(["reservations"], 32)
        assert workspaces(first) == ["w0", "w1", "w2"]        # ceil(7 / 3): the three lowest
        assert len(first) == 12                               # every job of them
        second = await takers[1].take_jobs(["reservations"], 32)
        assert workspaces(second) == ["w3", "w4", "w5"]
        third = await takers[2].take_jobs(["reservations"], 32)
        assert workspaces(third) == ["w6"]                    # what is left
        # the store's own session says nothing: it is not counted, and shares with nobody
        assert await store.take_jobs(["reservations"], 32) == []     # (every workspace is in use)

        # more jobs of a taken workspace go to the session that has it
        more = await store.submit([JobSpec("w1", "reservations"), JobSpec("w7", "reservations")])
        ws_of.update(zip(more, ("w1", "w7")))
        assert [j.record.id for j in await takers[0].take_jobs(["reservations"], 32)] == [more[0]]
        assert [j.record.id for j in await takers[2].take_jobs(["reservations"], 32)] == [more[1]]   # w6, w7

        # one session gone (not seen for the stale leases, never renewed): 2 takers share 8
        for t in takers:
            await t.give_back_jobs()
        for t in takers[:2]:
            t.backend.clock_skew = 7.0      # > 3 leases after takers[2]'s last heartbeat
            await t.backend.renew()
        got = await takers[0].take_jobs(["reservations"], 32)
        assert workspaces(got) == ["w0", "w1", "w2", "w3"]    # ceil(8 / 2)
    finally:
        for t in takers:
            await t.close()
        await store.close()


@pytest.mark.parametrize("engine", ENGINES)
async def test_takers_taking_at_once_never_share_a_workspace(request, engine):
    """Eight taking sessions take at once, again and again (real connections: on PostgreSQL
    their statements run in parallel in the server): no workspace ever has jobs reserved by two
    of them, and every job is reserved once. (Without the row lock of each picked workspace,
    takes started together all picked the same lowest workspaces: 1.7 refused claims per job.)"""
    store = await open_test_store(request, engine, lease=30.0)
    takers = [await _second(store, f"agent-{i}", info=TAKER) for i in range(8)]
    try:
        ids: list[int] = []
        for round_ in range(6):
            ids += await store.submit([JobSpec(f"r{round_}w{i % 40}", "reservations") for i in range(200)])
            got = await asyncio.gather(*(t.take_jobs(["reservations"], 32) for t in takers))
            owner_of_ws: dict[str, set[str]] = {}
            for t, jobs in zip(takers, got):
                for j in jobs:
                    owner_of_ws.setdefault(j.record.workspace, set()).add(t.session)
            assert all(len(o) == 1 for o in owner_of_ws.values()), owner_of_ws
            assert sum(1 for jobs in got if jobs) >= 2        # (they did share the work)
            every = sorted(j.record.id for jobs in got for j in jobs)
            assert len(every) == len(set(every)) and set(every) <= set(ids)
            for t in takers:
                await t.give_back_jobs()
    finally:
        for t in takers:
            await t.close()
        await store.close()


@pytest.mark.parametrize("engine", ["postgresql"])
async def test_a_take_in_flight_keeps_its_workspaces_from_a_take_beside_it(request, engine):
    """Forced interleaving: while another transaction holds the row of a workspace's first
    queued job (a take in flight picked it), a take beside it leaves that workspace."""
    import psycopg

    store = await open_test_store(request, engine)
    taker = await _second(store, "agent-1", info=TAKER)
    try:
        ids = await store.submit([JobSpec(ws, "reservations") for ws in ("a", "b", "a", "b", "c")])
        async with await psycopg.AsyncConnection.connect(store.url.text.split("?")[0]) as conn:
            async with conn.transaction():
                await conn.execute("SELECT 1 FROM lanemon.jobs WHERE id = %s FOR UPDATE", (ids[0],))   # "a"
                got = await taker.take_jobs(["reservations"], 10)
                assert [j.record.id for j in got] == [ids[1], ids[3], ids[4]]        # "b" and "c" only
        assert [j.record.id for j in await taker.take_jobs(["reservations"], 10)] == [ids[0], ids[2]]
    finally:
        await taker.close()
        await store.close()


async def test_an_sqlite_take_with_nothing_in_its_share_takes_no_write_lock(request, monkeypatch):
    """Free queued jobs, none in this session's share (their workspace's lane is held by another
    session): the take comes back empty without a write transaction, which every other process's
    operation would wait for. (The code before took the write lock whenever any queued job was
    free: with eight agents, most of their polls.)"""
    store = await open_test_store(request, "sqlite", lease=30.0)
    taker = await _second(store, "agent-1", info=TAKER)
    try:
        ids = await store.submit([JobSpec("a", "reservations") for _ in range(3)])
        assert store.lanes("scheduled", clock=lambda: 0.0, emit=None).claim("a", "me") is not None
        writes = []
        begin = taker.backend._tx
        monkeypatch.setattr(taker.backend, "_tx", lambda: writes.append(1) or begin())
        assert await taker.take_jobs(["reservations"], 10) == []
        assert writes == []
        assert [j.record.id for j in await store.take_jobs(["reservations"], 10)] == ids   # (free, and the holder's)
    finally:
        await taker.close()
        await store.close()


async def test_an_sqlite_take_reserves_under_the_write_lock_only_what_is_still_free(request, monkeypatch):
    """SQLite picks a take's jobs without the write lock (a read) and reserves them under it.
    Forced interleaving: between the two, another session reserves a job of one picked workspace
    and claims the lane of another; the reservation leaves both workspaces and takes the rest."""
    store = await open_test_store(request, "sqlite", lease=30.0)
    taker = await _second(store, "agent-1", info=TAKER)
    try:
        ids = await store.submit([JobSpec(ws, "reservations") for ws in ("a", "b", "c", "a", "b", "c")])
        lanes = store.lanes("scheduled", clock=lambda: 0.0, emit=None)
        between: list[str] = []
        begin = taker.backend._tx

        def meanwhile():
            if not between:       # once: the first write transaction after the pick
                with sqlite3.connect(store.backend.path) as db:
                    db.execute("UPDATE jobs SET taken_by = ?, taken_until = ? WHERE id = ?",
                               (store.session, store.backend.clock() + 30.0, ids[0]))     # an "a"
                between.append("a reserved")
                assert lanes.claim("b", "me") is not None                                   # "b" held
                between.append("b held")
            return begin()

        monkeypatch.setattr(taker.backend, "_tx", meanwhile)
        got = await taker.take_jobs(["reservations"], 10)
        assert between == ["a reserved", "b held"]
        assert [j.record.id for j in got] == [ids[2], ids[5]]           # the "c" jobs only
        assert await taker.take_jobs(["reservations"], 10) == []           # "a" and "b" are in use
    finally:
        await taker.close()
        await store.close()


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_take_shares_out_the_head_of_the_queues_only(request, engine, monkeypatch):
    """Only the first ``TAKE_HEAD`` queued jobs (in id order, over the queues) are shared out: a
    take's cost stays bounded; the jobs behind them are taken once they come to the head."""
    import lanemon.store.sql.postgres as pg
    import lanemon.store.sql.sqlite as sq

    for module in (pg, sq):
        monkeypatch.setattr(module, "TAKE_HEAD", 4)
    store = await open_test_store(request, engine)
    taker = await _second(store, "agent-1", info=TAKER)
    try:
        ids = await store.submit([JobSpec(ws, q) for ws, q in (("a", "cafe"), ("b", "reservations"),
                                                              ("c", "cafe"), ("d", "reservations"),
                                                              ("e", "cafe"), ("f", "reservations"))])
        got = await taker.take_jobs(["reservations", "cafe"], 10)
        assert [j.record.id for j in got] == ids[:4]
        for j in got:   # they run: the head moves on
            await store.records(writer="a", fenced=False).save(j.record._replace(state=State.RUNNING, attempts=1))
        assert [j.record.id for j in await taker.take_jobs(["reservations", "cafe"], 10)] == ids[4:]
    finally:
        await taker.close()
        await store.close()


async def test_a_big_submit_to_a_new_postgresql_store_leaves_the_planner_statistics(request):
    """``take_jobs``'s plan chosen without statistics read every queued job per workspace
    picked (3 s a take at 50,000 jobs): a submit of ``ANALYZE_AFTER`` jobs or more to a table
    whose statistics know fewer rows analyzes it."""
    from lanemon.store.sql.postgres import ANALYZE_AFTER

    store = await open_test_store(request, "postgresql")
    try:
        await store.submit([JobSpec(f"w{i % 50}", "reservations") for i in range(ANALYZE_AFTER)])
        rows = (await store.backend.read([("SELECT reltuples FROM pg_class WHERE oid = "
                                           "'lanemon.jobs'::regclass", ())]))[1][0]
        assert rows[0][0] >= ANALYZE_AFTER
    finally:
        await store.close()


@pytest.mark.parametrize("engine", ENGINES)
async def test_give_back_jobs_by_id_ends_those_reservations_of_this_session_only(request, engine):
    """``give_back_jobs(ids)`` frees the jobs ``ids`` this session reserved, and nothing else:
    not its other reservations, not another session's (an agent gives back the jobs of a take
    it could not adopt: the keeper would renew them forever)."""
    store = await open_test_store(request, engine)
    other = await _second(store, "b")
    try:
        ids = await store.submit([JobSpec(f"w{i}", "reservations") for i in range(4)])
        mine = [j.record.id for j in await store.take_jobs(["reservations"], 2)]
        theirs = [j.record.id for j in await other.take_jobs(["reservations"], 2)]
        assert mine == ids[:2] and theirs == ids[2:]
        assert await store.give_back_jobs([ids[1], ids[2]]) == 1       # its own ids[1]; not ids[2]
        taken = _taken(await store.dump())
        assert taken == {ids[0]: store.session, ids[1]: None, ids[2]: other.session, ids[3]: other.session}
        assert await store.give_back_jobs([]) == 0
    finally:
        await other.close()
        await store.close()


async def test_a_reservation_is_no_news_for_the_change_feed(request):
    store = await open_test_store(request, "sqlite")
    try:
        await store.submit([JobSpec("w", "reservations")] * 3)
        count = "SELECT count(*) FROM changes"
        (before,), = (await store.backend.read([(count, ())]))[1][0]
        await store.take_jobs(["reservations"], 2)
        await store.backend.renew()
        await store.give_back_jobs()
        (after,), = (await store.backend.read([(count, ())]))[1][0]
        assert after == before
        (job,) = await store.take_jobs(["reservations"], 1)
        await store.records(writer="a", fenced=False).save(job.record._replace(state=State.RUNNING, attempts=1))
        (saved,), = (await store.backend.read([(count, ())]))[1][0]
        assert saved == after + 1                       # a save is news
    finally:
        await store.close()


@pytest.mark.parametrize("engine", ENGINES)
async def test_attempts_are_counted_by_the_store_whatever_record_the_writer_holds(request, engine):
    """An agent adopts a queued job (attempts 0); another runs it and loses its lane (the job is
    re-queued, attempts 1); the first then runs it from its older record: the store counts 2."""
    store = await open_test_store(request, engine, lease=1.0)
    other = await _second(store, "b")
    try:
        (jid,) = await store.submit([JobSpec("w", "reservations")])
        (old,) = await other.queued_jobs(["reservations"], 0, 10)  # b's record: attempts 0
        lanes_a = store.lanes("scheduled", clock=lambda: 0.0, emit=None)
        token = await lanes_a.aclaim("w", "a")
        running = old.record._replace(state=State.RUNNING, attempts=1, epoch=token.epoch)
        await store.records(writer="a").save(running, (token,))
        other.backend.clock_skew = 2.0  # a's lease ran out: b's reap re-queues the job
        await other.backend.reap()
        job = (await other.dump())["jobs"][0]
        assert (job["state"], job["attempts"]) == ("queued", 1)
        lanes_b = other.lanes("scheduled", clock=lambda: 0.0, emit=None)
        mine = await lanes_b.aclaim("w", "b")
        records = other.records(writer="b")
        stale = old.record._replace(state=State.RUNNING, attempts=old.record.attempts + 1, epoch=mine.epoch)
        await records.save(stale, (mine,))
        assert (await other.dump())["jobs"][0]["attempts"] == 2
        await records.save(stale._replace(state=State.SUCCEEDED), (mine,))
        job = (await other.dump())["jobs"][0]
        assert (job["state"], job["attempts"], job["owner"]) == ("succeeded", 2, "b")
        assert jid == job["id"]
    finally:
        await other.close()
        await store.close()


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_lane_released_with_its_job_still_running_requeues_the_job(request, engine):
    """An owner whose final save was lost (its connection went away) and whose release then
    went through: the job is not left running under no lane; the dead-owner rule applies."""
    store = await open_test_store(request, engine)
    try:
        (jid,) = await store.submit([JobSpec("w", "reservations")])
        (queued,) = await store.queued_jobs(["reservations"], 0, 10)
        lanes = store.lanes("scheduled", clock=lambda: 0.0, emit=None)
        for attempt in range(1, 4):
            token = await lanes.aclaim("w", "a")
            running = queued.record._replace(state=State.RUNNING, attempts=attempt, epoch=token.epoch)
            await store.records(writer="a").save(running, (token,))
            assert await lanes.arelease(token)  # (no final save)
            job = (await store.dump())["jobs"][0]
            if attempt < 3:
                assert (job["state"], job["attempts"], job["epoch"], job["owner"]) == ("queued", attempt, None, None)
                assert job["error"] == "re-queued: owner a lost its lane (released with its job running)"
        assert (job["state"], job["error"], job["id"]) == ("failed", "owner died", jid)
        assert (await store.dump())["stats"]["requeued"] == 2
    finally:
        await store.close()


@pytest.mark.parametrize("engine", ENGINES)
async def test_an_unfenced_write_keeps_no_epoch_so_a_store_lane_of_that_number_never_reaps_it(request, engine):
    """A local-lanes agent's epochs are its own memory's (1, 2, ...) and mean nothing to the
    store. Written into the job, they matched the store's own epochs: when a store-lanes agent
    released its lane of that number, the dead-owner rule re-queued the local agent's running
    job under it (seen: two agents on one file, a 0.5 s job "run" in 36 ms, attempts 2)."""
    store = await open_test_store(request, engine)
    try:
        (jid,) = await store.submit([JobSpec("w1", "reservations")])
        (queued,) = await store.queued_jobs(["reservations"], 0, 10)
        lanes = store.lanes("scheduled", clock=lambda: 0.0, emit=None)
        token = await lanes.aclaim("w2", "store-agent")           # a store lane: some epoch E
        local = queued.record._replace(state=State.RUNNING, attempts=1, epoch=token.epoch)  # local epoch E too
        await store.records(writer="local-agent", fenced=False).save(local, (object(),))
        assert await lanes.arelease(token)                       # the store lane of epoch E ends
        job = (await store.dump())["jobs"][0]
        assert (job["id"], job["state"], job["owner"], job["epoch"]) == (jid, "running", "local-agent", None)
        assert (await store.dump())["stats"]["requeued"] == 0
    finally:
        await store.close()
