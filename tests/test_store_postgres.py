"""The PostgreSQL backend's own guarantees, with the SQLite equivalents where the point is shared.

* the epoch counter survives a server restart (PostgreSQL) / a reopen of the file (SQLite);
* an owner process killed with SIGKILL loses its lane to the next claimer at once on
  PostgreSQL (its session's advisory lock was freed with its connection), after its lease
  on SQLite;
* an owner process paused with SIGSTOP (its connection open) loses its lane after its lease
  on both, and its late fenced save is refused and kept in the ledger;
* the store clock is ``clock_timestamp()`` (it moves inside one transaction);
* bad input -> one line, never the password; a connection lost mid-operation -> StoreError;
* the immediate forms do nothing and say so on PostgreSQL (WouldBlock / False).

Leases are passed with the store clock's ``clock_skew`` instead of sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest
from engines import open_test_store
from postgres import skip_or_fail
from procs import Lines

from lanemon.lanes import Reservation, StaleWrite, State
from lanemon.store import url as store_url
from lanemon.store.lanes import WouldBlock
from lanemon.store.sql import open_sql_store
from lanemon.store.sql.backend import JobSpec
from lanemon.store.throwaway import ThrowawayCluster, available
from lanemon.store.url import StoreError

pytestmark = pytest.mark.asyncio

ROOT = Path(__file__).resolve().parent.parent
OWNER = Path(__file__).resolve().parent / "store_owner.py"
WAIT_S = 30.0      # generous limits on waiting for a condition (never asserted as a duration)
LONG_LEASE = 120.0  # the killed owner's lease: far longer than the test


def _clock() -> float:
    return 0.0


@contextlib.contextmanager
def _owner(url: str, workspace: str, job_id: int):
    """The owner process (tests/store_owner.py) and its output lines; killed and reaped after."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, str(OWNER), url, workspace, str(job_id)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        yield proc, Lines(proc.stdout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()


async def _claimed(lines: Lines) -> tuple[int, str]:
    m = await asyncio.to_thread(lines.wait_for, r"^claimed (\d+) (\S+)$", WAIT_S)
    return int(m.group(1)), m.group(2)


# -- the epoch counter survives ------------------------------------------------------------

@pytest.fixture(scope="module")
def private_cluster():
    """A PostgreSQL cluster of this module's own (it is restarted, and it asks for passwords:
    ``alice`` / ``s3cret-pw`` over TCP; ``postgres`` is trusted)."""
    here = available()
    if not here:
        skip_or_fail(f"no throwaway PostgreSQL cluster: {here.reason}")
    folder = tempfile.mkdtemp(prefix="lanemon-hba-")
    os.chmod(folder, 0o755)
    hba = os.path.join(folder, "pg_hba.conf")
    with open(hba, "w") as fh:
        fh.write("local all all trust\nhost all postgres 127.0.0.1/32 trust\n"
                 "host all all 127.0.0.1/32 scram-sha-256\n")
    os.chmod(hba, 0o644)
    try:
        with ThrowawayCluster(server_options={"hba_file": hba}) as cluster:
            with psycopg.connect(cluster.url("postgres"), autocommit=True) as conn:
                conn.execute("CREATE ROLE alice LOGIN PASSWORD 's3cret-pw'")
                conn.execute("CREATE DATABASE alices OWNER alice")
            yield cluster
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def _claim_release(store, n: int) -> int:
    lanes = store.lanes("scheduled", clock=_clock, emit=None)
    epoch = 0
    for i in range(n):
        token = await lanes.aclaim(f"W{i % 2}", f"q#{i}")
        epoch = token.epoch
        assert await lanes.arelease(token) is True
    return epoch


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
async def test_the_epoch_survives_a_restart_of_the_store(request, engine, tmp_path):
    if engine == "sqlite":
        url = store_url.parse("sqlite:///" + str(tmp_path / "store.db").lstrip("/"))
    else:
        cluster = request.getfixturevalue("private_cluster")
        url = store_url.parse(cluster.create_database("epochs"))
    store = await open_sql_store(url, create=True)
    before = await _claim_release(store, 5)
    await store.close()
    if engine == "postgresql":
        cluster.restart()
    store = await open_sql_store(url)
    try:
        after = await _claim_release(store, 1)
        assert after > before
        history = (await store.dump())["history"]
        assert len({h["epoch"] for h in history}) == len(history) == 6
    finally:
        await store.close()


async def test_a_session_open_across_a_server_restart_fails_in_one_line_then_goes_on(private_cluster):
    url = store_url.parse(private_cluster.create_database("across"))
    store = await open_sql_store(url, create=True)
    other = None
    try:
        lanes = store.lanes("scheduled", clock=_clock, emit=None)
        token = await lanes.aclaim("W", "q#1")
        private_cluster.restart()
        with pytest.raises(StoreError) as err:   # its pooled connection died with the server
            await store.backend.lane_rows()
        assert "\n" not in str(err.value) and "connection" in str(err.value)
        rows = None
        deadline = time.monotonic() + WAIT_S
        while rows is None and time.monotonic() < deadline:  # the pool replaces broken connections
            with contextlib.suppress(StoreError):
                rows = await store.backend.lane_rows()
        assert [r.epoch for r in rows] == [token.epoch]
        # the session's advisory lock went with the restart: another session may take the lane
        # at once, until the owner's renew takes its lock again
        assert await store.backend.renew() == 1
        other = await open_sql_store(url)
        assert await other.lanes("scheduled", clock=_clock, emit=None).aclaim("W", "q#2") is None
    finally:
        if other is not None:
            await other.close()
        await store.close()


# -- a killed owner, a paused owner ----------------------------------------------------------

@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
async def test_a_sigkilled_owner_loses_its_lane_at_once_on_postgresql_after_its_lease_on_sqlite(request, engine):
    store = await open_test_store(request, engine, lease=LONG_LEASE)
    try:
        (jid,) = await store.submit([JobSpec(workspace="W", queue="reservations", seconds=1.0)])
        lanes = store.lanes("scheduled", clock=_clock, emit=None)
        with _owner(store.url.text, "W", jid) as (proc, lines):
            epoch, _session = await _claimed(lines)
            assert await lanes.aclaim("W", "me#1") is None   # held, its owner alive
            killed = time.perf_counter()
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        if engine == "postgresql":
            token = None
            deadline = time.monotonic() + WAIT_S
            while token is None and time.monotonic() < deadline:
                token = await lanes.aclaim("W", "me#1")
                if token is None:
                    await asyncio.sleep(0.001)
            delay_ms = (time.perf_counter() - killed) * 1000
            assert token is not None, "the dead owner's lane was not taken before its lease"
            print(f"\nPostgreSQL: lane taken {delay_ms:.1f} ms after SIGKILL of its owner (lease {LONG_LEASE:g} s)")
            reason = "session gone"
        else:
            assert await lanes.aclaim("W", "me#1") is None   # the lease still runs: the lane waits
            store.backend.clock_skew = LONG_LEASE + 1
            token = await lanes.aclaim("W", "me#1")
            assert token is not None
            reason = "lease expired"
        dumped = await store.dump()
        (lane,) = dumped["lanes"]
        history = {h["epoch"]: h for h in dumped["history"]}
        assert token.epoch > epoch and lane["epoch"] == token.epoch
        assert history[epoch]["end_reason"] == "expired"
        if engine == "postgresql":  # taken before the dead owner's lease ran out
            assert lane["since"] < history[epoch]["claimed_at"] + LONG_LEASE
        (job,) = dumped["jobs"]
        assert job["state"] == "queued" and job["attempts"] == 1 and reason in job["error"]
        assert dumped["stats"]["lease_expired"] == 1 and dumped["stats"]["requeued"] == 1
    finally:
        await store.close()


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
async def test_a_sigstopped_owner_loses_its_lane_after_its_lease_and_its_late_save_is_refused(request, engine):
    lease = 5.0
    store = await open_test_store(request, engine, lease=lease)
    try:
        (jid,) = await store.submit([JobSpec(workspace="W", queue="reservations", seconds=1.0)])
        lanes = store.lanes("scheduled", clock=_clock, emit=None)
        with _owner(store.url.text, "W", jid) as (proc, lines):
            epoch, session = await _claimed(lines)
            os.kill(proc.pid, signal.SIGSTOP)
            # paused, connection open (PostgreSQL: its advisory lock held): alive until its lease ends
            assert await lanes.aclaim("W", "me#1") is None
            store.backend.clock_skew = lease - 1
            assert await lanes.aclaim("W", "me#1") is None
            store.backend.clock_skew = lease + 1
            token = await lanes.aclaim("W", "me#1")
            assert token is not None and token.epoch > epoch
            os.kill(proc.pid, signal.SIGCONT)
            proc.stdin.write("save\n")
            proc.stdin.flush()
            await asyncio.to_thread(lines.wait_for, r"^(saved|stale)$", WAIT_S)
            assert "stale" in lines.lines and "saved" not in lines.lines
            await asyncio.to_thread(proc.wait, WAIT_S)
        dumped = await store.dump()
        (entry,) = dumped["ledger"]
        assert (entry["writer"], entry["job"], entry["state"], entry["epoch_held"], entry["epoch_current"]) == \
            (session, jid, "succeeded", epoch, token.epoch)
        assert dumped["stats"]["stale_writes"] == 1
        (job,) = dumped["jobs"]
        assert job["state"] == "queued" and job["attempts"] == 1   # re-queued, the late save changed nothing
    finally:
        await store.close()


# -- the store clock ------------------------------------------------------------------------

async def test_the_store_clock_moves_inside_one_transaction(request):
    store = await open_test_store(request, "postgresql")
    try:
        async with await psycopg.AsyncConnection.connect(store.url.dsn) as conn:  # not autocommit: one txn
            async with conn.transaction():
                first = (await (await conn.execute("SELECT lanemon.clock(0), now()")).fetchone())
                second = (await (await conn.execute("SELECT lanemon.clock(0), now()")).fetchone())
        assert second[0] > first[0]          # clock_timestamp(): the time of the read
        assert second[1] == first[1]         # now() would not move: the transaction's start
        assert abs(first[0] - time.time()) < 3600  # seconds since the Unix epoch (same host)
    finally:
        await store.close()


# -- bad input: one line, never the password ---------------------------------------------------

def _one_line(err: pytest.ExceptionInfo, *, secret: str = "s3cret") -> str:
    text = str(err.value)
    assert "\n" not in text and text.strip() and secret not in text
    return text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_an_unreachable_server_is_one_line_without_the_password():
    url = store_url.parse(f"postgresql://alice:s3cret-pw@127.0.0.1:{_free_port()}/db")
    with pytest.raises(StoreError) as err:
        await open_sql_store(url)
    assert "unreachable" in _one_line(err) and "alice:***@" in str(err.value)


async def test_a_server_that_never_answers_times_out_in_one_line():
    with socket.socket() as silent:   # accepts the TCP connection (backlog), never speaks
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        url = store_url.parse(f"postgresql://alice:s3cret-pw@127.0.0.1:{port}/db?connect_timeout=1")
        with pytest.raises(StoreError) as err:
            await open_sql_store(url)
    assert "unreachable" in _one_line(err)


async def test_a_wrong_password_is_one_line_without_it(private_cluster):
    port = private_cluster.port
    with pytest.raises(StoreError) as err:
        await open_sql_store(store_url.parse(f"postgresql://alice:s3cret-wrong@127.0.0.1:{port}/alices"),
                             create=True)
    assert "login refused" in _one_line(err)
    # the right one works (so it was the password that was refused)
    store = await open_sql_store(store_url.parse(f"postgresql://alice:s3cret-pw@127.0.0.1:{port}/alices"),
                                 create=True)
    await store.close()


async def test_no_such_role_or_database_is_one_line(request, postgres_cluster):
    port = postgres_cluster.port
    with pytest.raises(StoreError) as err:
        await open_sql_store(store_url.parse(f"postgresql://nobody:s3cret@127.0.0.1:{port}/postgres"))
    assert "nobody" in _one_line(err) and "does not exist" in str(err.value)
    with pytest.raises(StoreError) as err:
        await open_sql_store(store_url.parse(f"postgresql://postgres:s3cret@127.0.0.1:{port}/no_such_db"))
    assert "no_such_db" in _one_line(err) and "does not exist" in str(err.value)


async def test_a_lanemon_schema_that_is_not_ours_or_newer_is_refused_and_left_alone(postgres_url):
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await conn.execute("CREATE SCHEMA lanemon; CREATE TABLE lanemon.accounts (id int)")
        with pytest.raises(StoreError) as err:
            await open_sql_store(store_url.parse(postgres_url), create=True)
        assert "not a lanemon store" in _one_line(err)
        cur = await conn.execute("SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                                 "WHERE nspname = 'lanemon'")
        assert [r[0] for r in await cur.fetchall()] == ["accounts"]   # nothing half-written
        await conn.execute("DROP SCHEMA lanemon CASCADE")
        with pytest.raises(StoreError) as err:
            await open_sql_store(store_url.parse(postgres_url))     # no schema, no create
        assert "lanemon store init" in _one_line(err)
        store = await open_sql_store(store_url.parse(postgres_url), create=True)
        await store.close()
        await conn.execute("UPDATE lanemon.meta SET value = '99' WHERE key = 'schema_version'")
        with pytest.raises(StoreError) as err:
            await open_sql_store(store_url.parse(postgres_url), create=True)
        assert "newer than this lanemon's" in _one_line(err)


async def test_a_connection_lost_mid_operation_is_a_store_error_then_the_pool_recovers(request):
    store = await open_test_store(request, "postgresql")
    try:
        lanes = store.lanes("scheduled", clock=_clock, emit=None)
        await lanes.aclaim("W", "q#1")
        async with await psycopg.AsyncConnection.connect(store.url.dsn, autocommit=True) as admin:
            # every connection of the store's pool (not its advisory-lock one, not ours)
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND pid <> %s", (store.backend.lock_pid,))
        with pytest.raises(StoreError) as err:
            await lanes.aclaim("V", "q#2")
        assert "connection" in _one_line(err)
        token = None
        deadline = time.monotonic() + WAIT_S
        while token is None and time.monotonic() < deadline:
            with contextlib.suppress(StoreError):
                token = await lanes.aclaim("V", "q#2")
        assert token is not None
        assert [lane["workspace"] for lane in (await store.dump())["lanes"]] == ["V", "W"]
    finally:
        await store.close()


# -- the immediate forms ------------------------------------------------------------------------

async def test_the_immediate_forms_do_nothing_on_postgresql_and_say_so(request):
    store = await open_test_store(request, "postgresql")
    try:
        lanes = store.lanes("scheduled", clock=_clock, emit=None)
        records = store.records()
        for call in (lambda: lanes.claim("W", "q#1"), lambda: lanes.revoke("W"),
                     lambda: lanes.request_stop("W"), lambda: lanes.release(None)):
            with pytest.raises(WouldBlock):
                call()
        rec = Reservation(id=1, workspace="W", queue="cafe", state=State.QUEUED, created_at=1.0, updated_at=1.0)
        assert records.save_nowait(rec) is False
        dumped = await store.dump()
        assert dumped["lanes"] == [] and dumped["jobs"] == [] and dumped["stats"]["claims"] == 0
    finally:
        await store.close()


# -- a save in flight holds off a revoke ----------------------------------------------------------

async def test_a_revoke_waits_for_a_save_in_flight_then_the_next_save_is_refused(request):
    store = await open_test_store(request, "postgresql")
    try:
        lanes = store.lanes("scheduled", clock=_clock, emit=None)
        records = store.records()
        rec = Reservation(id=1, workspace="W", queue="cafe", state=State.QUEUED, created_at=1.0, updated_at=1.0)
        await records.save(rec)
        token = await lanes.aclaim("W", "q#1")
        async with await psycopg.AsyncConnection.connect(store.url.dsn) as saver:   # one open transaction
            async with saver.transaction():
                # a fenced save, in flight: the function ran, its transaction has not committed
                cur = await saver.execute(
                    "SELECT outcome FROM lanemon.save_job(1, 'W', 'cafe', 'running', 1, 1, 'r', NULL, NULL, NULL, "
                    "1, %s, ARRAY['scheduled'], ARRAY['W'], ARRAY[%s]::bigint[], 'saver', ARRAY['queued'], 0)",
                    (token.epoch, token.epoch))
                assert (await cur.fetchone())[0] == "ok"
                revoke = asyncio.ensure_future(lanes.arevoke("W"))
                waiting = False
                deadline = time.monotonic() + WAIT_S
                async with await psycopg.AsyncConnection.connect(store.url.dsn, autocommit=True) as watch:
                    while not waiting and not revoke.done() and time.monotonic() < deadline:
                        cur = await watch.execute(
                            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                            "AND wait_event_type = 'Lock' AND query LIKE '%%revoke_lane%%'")
                        waiting = (await cur.fetchone())[0] == 1
                        await asyncio.sleep(0.001)
                assert waiting and not revoke.done(), "the revoke did not wait for the save in flight"
            assert (await revoke).epoch == token.epoch   # the save committed first, then the revoke
        with pytest.raises(StaleWrite):
            await records.save(rec._replace(state=State.SUCCEEDED, epoch=token.epoch), fence=(token,))
        dumped = await store.dump()
        assert dumped["jobs"][0]["state"] == "running" and dumped["lanes"] == []
        assert [h["end_reason"] for h in dumped["history"]] == ["revoked"]
        assert [(e["writer"], e["state"]) for e in dumped["ledger"]] == [(store.session, "succeeded")]
    finally:
        await store.close()


# -- several sessions at once ------------------------------------------------------------------

@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
async def test_sessions_racing_for_two_workspaces_never_share_one(request, engine):
    """Four sessions (PostgreSQL: each its own connections, their operations interleaved on the
    server) claim, save fenced and release the same two workspaces; nothing fails (no deadlock,
    no duplicate key), every epoch is unique, one workspace's ownerships never overlap, every
    write that went through was fenced by the lane current at its commit."""
    first = await open_test_store(request, engine)
    url = first.url
    stores = [first] + [await open_sql_store(url, name=f"s{i}") for i in range(1, 4)]
    try:
        async def worker(k: int, store) -> int:
            lanes = store.lanes("scheduled", clock=_clock, emit=None)
            records = store.records()
            done = 0
            for i in range(60):
                ws = "AB"[(i + k) % 2]
                token = await lanes.aclaim(ws, f"s{k}#{i}")
                if token is None:
                    await asyncio.sleep(0)
                    continue
                rec = Reservation(id=k * 1000 + i, workspace=ws, queue="cafe", state=State.QUEUED,
                                  created_at=1.0, updated_at=1.0)
                await records.save(rec, fence=(token,))
                await records.save(rec._replace(state=State.RUNNING, epoch=token.epoch), fence=(token,))
                await records.save(rec._replace(state=State.SUCCEEDED, epoch=token.epoch), fence=(token,))
                assert await lanes.arelease(token) is True
                done += 1
            return done

        done = await asyncio.gather(*(worker(k, s) for k, s in enumerate(stores)))
        dumped = await first.dump()
        history = dumped["history"]
        assert 0 < sum(done) == len(history) and len({h["epoch"] for h in history}) == len(history)
        for ws in "AB":
            spans = sorted((h["claimed_at"], h["ended_at"]) for h in history if h["workspace"] == ws)
            assert all(end is not None for _, end in spans)
            assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
        assert all(j["state"] == "succeeded" for j in dumped["jobs"]) and len(dumped["jobs"]) == sum(done)
        assert dumped["ledger"] == [] and dumped["lanes"] == []
    finally:
        for store in stores:
            await store.close()


async def _until_a_lock_waits(dsn: str, timeout_s: float = 10.0) -> None:
    """Until some session of the server waits for a lock (``pg_locks``: read live, not a
    snapshot), polled on a connection of its own."""
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as probe:
        deadline = time.monotonic() + timeout_s
        while not (await (await probe.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")).fetchone())[0]:
            assert time.monotonic() < deadline, "no session came to wait for a lock"
            await asyncio.sleep(0.01)


async def test_a_claim_that_waited_on_another_claim_is_stamped_after_that_one_ended(request):
    """A claim that found the lane free but had to wait for another session's claim of it (not
    yet committed) was stamped with the time it read before the wait: when the other claim's
    transaction also ended its lane (claim and release, one transaction), the next epoch's
    ``claimed_at`` came out *before* the previous epoch's ``ended_at`` -- one lane held by two
    owners at once, in the history (seen as a "double grant" by the agents' audit)."""
    store = await open_test_store(request, "postgresql")
    other = await open_test_store(request, "postgresql")
    try:
        sql = ("SELECT epoch FROM lanemon.claim_lane(%s, %s, %s, %s, %s, 0)")
        async with await psycopg.AsyncConnection.connect(store.url.dsn) as conn:  # one open transaction
            async with conn.transaction():
                first = (await (await conn.execute(sql, ("scheduled", "w", "x", store.session, 60.0))).fetchone())[0]
                # the other session's claim of the same lane, started while this one is open
                waiting = asyncio.ensure_future(other.backend.claim_lane("scheduled", "w", "c"))
                await _until_a_lock_waits(store.url.dsn)   # it is waiting on this transaction
                await conn.execute("SELECT lanemon.release_lane(%s, %s, %s, 0)", ("scheduled", "w", first))
                await asyncio.sleep(0.05)      # the time the lane ends is well after the waiting claim's read
            granted = await waiting
        dump = await store.dump()
        rows = {h["epoch"]: h for h in dump["history"]}
        assert rows[first]["ended_at"] is not None
        assert granted is not None            # granted once the first was over: stamped after it
        assert rows[granted.epoch]["claimed_at"] >= rows[first]["ended_at"], (rows[first], rows[granted.epoch])
        assert granted.claimed_at >= rows[first]["ended_at"]
    finally:
        await other.close()
        await store.close()
