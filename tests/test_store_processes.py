"""Real OS processes on one store: killed, stopped and resumed owners, then invariants from the store.

Each engine (SQLite file; PostgreSQL through the ``postgres_url`` fixture)
gets several ``python -m lanemon.store.churn`` processes sharing the same jobs
over the same few workspaces, with a 1-second lease:

* two "victims" hold their job running for a minute (``--hold 60``): as soon
  as the store shows each one's job ``running`` under its lane, it is
  SIGKILLed -- mid-save, deterministically (its final save is a minute away);
* a third holds for 1.5 s per job: once the store shows its job running it is
  SIGSTOPped (checked still running under its epoch after the stop, else
  resumed and tried again with its next job), kept stopped until the store
  shows its lane expired and this test's session holds that workspace's lane
  (forced: a new owner is there when it wakes), then SIGCONTed: its late final
  save must be refused and be in the ledger (epoch held vs the test's), its
  release stale, and the test's lane left as it was;
* replacements and more workers (short holds) then run every job to its end
  (the resumed one is told to stop with SIGTERM: it finishes its cycle, exits 0).

Then, from ``dump()``: every epoch unique; per (lane, workspace) the history
intervals never overlap and only the current lanes row is open (at most one
owner at any time); every job exactly one terminal state, each success saved
by exactly one worker under an epoch whose interval contains its
``store_ended`` and by that epoch's session; every ledger entry's epoch held
had ended before the refused write (or was another lane's). No process is
left: each is waited for and ``os.kill(pid, 0)`` finds none.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from engines import open_test_store
from postgres import skip_or_fail
from procs import LoggedProcesses

import lanemon
from lanemon.store.churn import write_jobs
from lanemon.store.claims import CounterState
from lanemon.store.sql.backend import JobSpec
from lanemon.store.url import StoreError

pytestmark = pytest.mark.asyncio

ENGINES = ["sqlite", "postgresql"]
LEASE = 1
WORKSPACES = ("w0", "w1", "w2")
JOBS = 45
TIMEOUT_S = 60.0
ROOT = str(Path(lanemon.__file__).resolve().parent.parent)
TERMINAL = {"succeeded", "failed", "cancelled"}


async def _store(request, engine: str):
    if engine == "postgresql" and importlib.util.find_spec("lanemon.store.sql.postgres") is None:
        skip_or_fail("the PostgreSQL backend (lanemon.store.sql.postgres) is not in this tree yet")
    return await open_test_store(request, engine, lease=LEASE)


class Workers(LoggedProcesses):
    """The churn processes of one test; ``close()`` leaves none behind."""

    what = "worker"

    def __init__(self, url: str, jobs_file: str, folder: Path) -> None:
        super().__init__(folder)
        self.url = url
        self.jobs_file = jobs_file

    def start(self, name: str, *, hold: float, seed: int, more: tuple[str, ...] = ()) -> subprocess.Popen:
        """``python -m lanemon.store.churn`` on the shared jobs, or with ``more`` arguments
        instead (e.g. ``--counters``)."""
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        log = open(self.folder / f"{name}.log", "w")
        work = more or ("--jobs", self.jobs_file)
        proc = subprocess.Popen(
            [sys.executable, "-m", "lanemon.store.churn", "--store", self.url, *work,
             "--hold", str(hold), "--seed", str(seed), "--name", name,
             "--stats", str(self.folder / f"{name}.json")],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        log.close()
        self.procs[name] = proc
        return proc

    async def wait(self, name: str, timeout_s: float = TIMEOUT_S) -> int:
        return await super().wait(name, timeout_s)

    def close(self) -> None:
        self.kill_all()
        for proc in self.procs.values():
            with pytest.raises(ProcessLookupError):
                os.kill(proc.pid, 0)


async def _until(store, predicate, what: str, timeout_s: float = TIMEOUT_S):
    """Poll ``dump()`` until ``predicate(dump)`` is truthy; return that value."""
    deadline = time.monotonic() + timeout_s
    while True:
        dump = await store.dump()
        value = predicate(dump)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout_s} s: {what}")
        await asyncio.sleep(0.02)


async def _writable(store) -> bool:
    """Can this session write? False when a stopped process holds the store's write lock
    (SIGSTOP landed inside one of its transactions, e.g. its keeper's renewal: SQLite's
    lock, or PostgreSQL row locks, are held until it runs again; no lease ends that)."""
    try:
        await asyncio.wait_for(store.backend.renew(), 8)
    except (TimeoutError, StoreError):
        return False
    return True


def _of(name: str, session: str | None) -> bool:
    return session is not None and session.endswith(f":{name}")


def _running_under(name: str):
    """A predicate: the job ``name`` holds running, with its lane still current at that epoch."""
    def find(dump):
        lanes = {(lane["workspace"], lane["epoch"]) for lane in dump["lanes"] if lane["lane"] == "scheduled"}
        for job in dump["jobs"]:
            if job["state"] == "running" and _of(name, job["owner"]) and (job["workspace"], job["epoch"]) in lanes:
                return job["id"], job["epoch"]
        return None
    return find


async def _submit(store) -> list[tuple[int, str]]:
    specs = [JobSpec(workspace=WORKSPACES[i % len(WORKSPACES)], queue="reservations") for i in range(JOBS)]
    ids = await store.submit(specs)
    return [(i, s.workspace) for i, s in zip(ids, specs)]


@pytest.mark.parametrize("engine", ENGINES)
async def test_killed_stopped_and_resumed_owners_leave_the_store_consistent(request, tmp_path, engine):
    store = await _store(request, engine)
    workers = None
    try:
        jobs = await _submit(store)
        jobs_file = str(tmp_path / "jobs.json")
        write_jobs(jobs_file, jobs)
        workers = Workers(store.url.text, jobs_file, tmp_path)

        # -- two owners SIGKILLed mid-save ------------------------------------------------
        killed = {}
        for seed, name in enumerate(("k1", "k2")):
            workers.start(name, hold=60, seed=seed)
        for name in ("k1", "k2"):
            killed[name] = await _until(store, _running_under(name), f"{name} runs a job")
            workers.procs[name].send_signal(signal.SIGKILL)
            assert await workers.wait(name) == -signal.SIGKILL

        # -- one owner SIGSTOPped past its lease, then resumed -----------------------------
        workers.start("s", hold=1.5, seed=7)
        while True:
            held = await _until(store, _running_under("s"), "s runs a job")
            workers.procs["s"].send_signal(signal.SIGSTOP)
            if _running_under("s")(await store.dump()) == held and await _writable(store):
                break  # stopped mid-save: its job is running under its current lane
            workers.procs["s"].send_signal(signal.SIGCONT)  # it was between saves: try its next job
        stopped_job, stopped_epoch = held

        # -- replacements and more workers run everything else ---------------------------------
        for seed, name in enumerate(("r1", "r2", "n1", "n2"), start=10):
            workers.start(name, hold=0.02, seed=seed)

        def history_of(dump, epoch):
            return next((h for h in dump["history"] if h["epoch"] == epoch), None)

        await _until(store, lambda d: (history_of(d, stopped_epoch) or {}).get("ended_at") is not None,
                     "the stopped owner's lane expires")
        # forced: when it resumes, its workspace's lane has a new owner (this test's session)
        store.start_keeper()
        lanes = store.lanes("scheduled", clock=time.time, emit=None)
        stopped_ws = dict(jobs)[stopped_job]
        deadline = time.monotonic() + TIMEOUT_S
        while (mine := await lanes.aclaim(stopped_ws, "test")) is None:
            assert time.monotonic() < deadline, "this test cannot claim the stopped owner's workspace"
            await asyncio.sleep(0.005)
        before = (await store.dump())["stats"]["stale_releases"]
        workers.procs["s"].send_signal(signal.SIGCONT)
        await _until(store, lambda d: any(_of("s", e["writer"]) and e["epoch_held"] == stopped_epoch
                                          for e in d["ledger"]), "the resumed owner's late write is refused")
        # then its release: refused (counted), or -- wrongly -- it took the new owner's lane
        await _until(store, lambda d: d["stats"]["stale_releases"] > before
                     or all(lane["epoch"] != mine.epoch for lane in d["lanes"]), "the resumed owner releases")
        dump = await store.dump()
        assert [lane["epoch"] for lane in dump["lanes"] if lane["workspace"] == stopped_ws] == [mine.epoch]
        assert history_of(dump, mine.epoch)["ended_at"] is None
        assert await lanes.arelease(mine)
        workers.procs["s"].send_signal(signal.SIGTERM)  # (its 1.5-s holds would only slow the rest)
        for name in ("s", "r1", "r2", "n1", "n2"):
            assert await workers.wait(name) == 0, workers.log(name)

        dump = await store.dump()
    finally:
        if workers is not None:
            workers.close()
        await store.close()

    history = {h["epoch"]: h for h in dump["history"]}
    jobs_by_id = {j["id"]: j for j in dump["jobs"]}

    # every epoch unique; every lane row, job epoch and ledger epoch is a granted ownership
    assert len(history) == len(dump["history"])
    assert {lane["epoch"] for lane in dump["lanes"]} <= history.keys()
    assert {j["epoch"] for j in dump["jobs"] if j["epoch"] is not None} <= history.keys()
    assert {e["epoch_held"] for e in dump["ledger"]} <= history.keys()

    # at most one owner per (lane, workspace) at any time: intervals in epoch order never overlap,
    # and the only open one is the current lanes row
    current = {(lane["lane"], lane["workspace"]): lane["epoch"] for lane in dump["lanes"]}
    by_lane: dict[tuple[str, str], list[dict]] = {}
    for h in dump["history"]:
        by_lane.setdefault((h["lane"], h["workspace"]), []).append(h)
    for key, spans in by_lane.items():
        spans.sort(key=lambda h: h["epoch"])
        for before, after in zip(spans, spans[1:]):
            assert before["ended_at"] is not None, (key, before, after)
            assert before["claimed_at"] <= before["ended_at"] <= after["claimed_at"], (key, before, after)
        open_spans = [h["epoch"] for h in spans if h["ended_at"] is None]
        assert open_spans == ([current[key]] if key in current else []), (key, open_spans)

    # the killed and stopped owners lost their lanes to the lease
    for name, (_, epoch) in killed.items():
        assert history[epoch]["end_reason"] == "expired", (name, history[epoch])
    assert history[stopped_epoch]["end_reason"] == "expired"

    # every job exactly one terminal state; each success saved by exactly one worker,
    # under an epoch that was current when the final save was stored, by that epoch's session
    assert {j["state"] for j in dump["jobs"]} <= TERMINAL, [j for j in dump["jobs"] if j["state"] not in TERMINAL]
    assert len(dump["jobs"]) == JOBS
    survivors = ("s", "r1", "r2", "n1", "n2")
    finished = [i for name in survivors for i in workers.stats(name)["finished"]]
    assert len(finished) == len(set(finished)), "a job finished twice"
    assert set(finished) == {j["id"] for j in dump["jobs"] if j["state"] == "succeeded"}
    for job in dump["jobs"]:
        if job["state"] == "failed":
            assert job["error"] == "owner died", job
        h = history[job["epoch"]]
        assert (h["lane"], h["workspace"]) == ("scheduled", job["workspace"]), (job, h)
        assert h["claimed_at"] <= job["end"], (job, h)
        assert h["ended_at"] is None or job["end"] <= h["ended_at"], (job, h)
        if job["state"] == "succeeded":
            assert job["owner"] == h["session"], (job, h)
    for name, (job_id, _) in killed.items():  # re-queued, then run by someone else
        assert jobs_by_id[job_id]["state"] == "succeeded" and jobs_by_id[job_id]["attempts"] >= 2, name
    assert jobs_by_id[stopped_job]["epoch"] != stopped_epoch

    # every refused write: its epoch had ended before it (or was another lane's), and the
    # resumed owner's late final save is among them
    for entry in dump["ledger"]:
        h = history[entry["epoch_held"]]
        if (h["lane"], h["workspace"]) == (entry["lane"], entry["workspace"]):
            assert h["ended_at"] is not None and h["ended_at"] <= entry["at"], (entry, h)
            assert entry["epoch_current"] != entry["epoch_held"], entry
    late = [e for e in dump["ledger"] if _of("s", e["writer"]) and e["epoch_held"] == stopped_epoch]
    assert [(e["job"], e["state"], e["epoch_current"]) for e in late] == [(stopped_job, "succeeded", mine.epoch)]
    s = workers.stats("s")
    assert s["refused_writes"] >= 1 and s["stale_releases"] >= 1, s
    assert dump["stats"]["stale_writes"] == len(dump["ledger"]) >= 1
    assert dump["stats"]["stale_releases"] >= 1
    assert dump["stats"]["lease_expired"] >= 3


@pytest.mark.parametrize("engine", ENGINES)
async def test_sigterm_finishes_the_current_cycle_and_exits_0(request, tmp_path, engine):
    store = await _store(request, engine)
    workers = None
    try:
        jobs = await _submit(store)
        jobs_file = str(tmp_path / "jobs.json")
        write_jobs(jobs_file, jobs)
        workers = Workers(store.url.text, jobs_file, tmp_path)
        workers.start("t", hold=60, seed=1)
        job_id, epoch = await _until(store, _running_under("t"), "t runs a job")
        workers.procs["t"].send_signal(signal.SIGTERM)
        assert await workers.wait("t") == 0, workers.log("t")
        dump = await store.dump()
    finally:
        if workers is not None:
            workers.close()
        await store.close()
    job = next(j for j in dump["jobs"] if j["id"] == job_id)
    assert (job["state"], job["epoch"]) == ("succeeded", epoch)
    assert workers.stats("t")["finished"] == [job_id]
    assert workers.stats("t")["ended_by"] == "stop"
    assert dump["lanes"] == []
    assert next(h for h in dump["history"] if h["epoch"] == epoch)["end_reason"] == "released"
    assert [j["state"] for j in dump["jobs"]].count("queued") == JOBS - 1


COUNTERS = 3
TTL = 1.0


async def _board_until(board, predicate, what: str, timeout_s: float = TIMEOUT_S):
    """Re-read the board (``refresh``) until ``predicate(views)`` is truthy; return that value."""
    deadline = time.monotonic() + timeout_s
    while True:
        await board.refresh()
        value = predicate(board.views())
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout_s} s: {what}")
        await asyncio.sleep(0.02)


def _claimed_by(name: str):
    def find(views):
        return next(((v.id, v.epoch) for v in views if v.state is CounterState.CLAIMED and v.owner == name), None)
    return find


@pytest.mark.parametrize("engine", ENGINES)
async def test_counter_claims_of_killed_and_stopped_processes_never_double_assign(request, tmp_path, engine):
    """Counters: processes claim, finalize and vacate the counters of one board (TTL 1 s).
    One is SIGKILLed between its claim and its finalize; one is SIGSTOPped there until
    its claim expired and this test claimed that counter (forced), then resumed: its
    finalize must be refused and this test's claim left current. Then no double
    assignment store-wide, every finalize accounted for, every customer found alone
    on its counter right after its finalize and still seated when it left."""
    if engine == "postgresql":
        from lanemon.store.sql.postgres import PostgresBackend
        if not hasattr(PostgresBackend, "pool"):  # (what lanemon.store.sql.board's PgBoard uses)
            skip_or_fail("the counter board on PostgreSQL needs PostgresBackend.pool (claims and the "
                         "PostgreSQL backend are not integrated in this tree yet)")
    store = await _store(request, engine)
    board = store.claims(counters=COUNTERS, default_ttl=TTL)
    workers = Workers(store.url.text, "", tmp_path)
    counters = ("--counters", str(COUNTERS), "--ttl", str(TTL), "--cycles", "25")
    try:
        await board.refresh()
        workers.start("k", hold=60, seed=1, more=counters)
        killed_counter, _ = await _board_until(board, _claimed_by("k"), "k claims a counter")
        workers.procs["k"].send_signal(signal.SIGKILL)
        assert await workers.wait("k") == -signal.SIGKILL

        workers.start("s", hold=0.5, seed=2, more=counters)
        while True:
            held = await _board_until(board, _claimed_by("s"), "s claims a counter")
            workers.procs["s"].send_signal(signal.SIGSTOP)
            await board.refresh()
            if _claimed_by("s")(board.views()) == held and await _writable(store):
                break  # stopped between its claim and its finalize, its claim still live
            workers.procs["s"].send_signal(signal.SIGCONT)
        stopped_counter, stopped_epoch = held

        for seed, name in enumerate(("n1", "n2", "n3"), start=10):
            workers.start(name, hold=0.01, seed=seed, more=counters)

        # forced: when it resumes, its counter has another live claim (this test's)
        deadline = time.monotonic() + TIMEOUT_S
        while (mine := await board.claim(stopped_counter, "test", "test-customer", ttl=30)) is None:
            assert time.monotonic() < deadline, "this test cannot claim the stopped owner's counter"
            await asyncio.sleep(0.005)
        assert mine.epoch > stopped_epoch
        before = board.counts()
        workers.procs["s"].send_signal(signal.SIGCONT)
        await _board_until(board, lambda _: board.counts().finalize_refused > before.finalize_refused
                           and board.counts().release_refused > before.release_refused,
                           "the resumed owner's finalize and release are refused")
        assert await board.finalize(mine)
        assert board.views()[stopped_counter].customers == ("test-customer",)
        assert await board.vacate(stopped_counter, "test-customer")
        workers.procs["s"].send_signal(signal.SIGTERM)
        for name in ("s", "n1", "n2", "n3"):
            assert await workers.wait(name) == 0, workers.log(name)
        await board.refresh()
        counts, views = board.counts(), board.views()
        dump = await store.dump()
    finally:
        workers.close()
        await store.close()

    stats = {name: workers.stats(name) for name in ("s", "n1", "n2", "n3")}
    assert counts.double_assignments == 0 and dump["stats"]["board_double_assignments"] == 0
    assert all(st["crowded"] == 0 and st["vacate_failed"] == 0 and st["errors"] == 0 for st in stats.values()), stats
    assert counts.finalized == sum(st["finalized"] for st in stats.values()) + 1  # + this test's
    assert counts.finalize_refused == sum(st["finalize_refused"] for st in stats.values()) >= 1
    assert stats["s"]["finalize_refused"] >= 1 and stats["s"]["stale_releases"] >= 1, stats["s"]
    assert all(stats[n]["cycles"] == 25 for n in ("n1", "n2", "n3")), stats
    assert counts.expired >= 2  # the killed one's claim and the stopped one's
    assert killed_counter in range(COUNTERS)
    assert all(v.customers == () for v in views), views


async def test_a_sigterm_after_the_work_ended_still_exits_0(tmp_path):
    """A SIGTERM that lands after the work ended (all jobs done) while the worker exits is
    not death by the signal: after the run the worker ignores it (a Python-level handler
    would not do: the interpreter puts the default back while it shuts down)."""
    url = "sqlite:///" + str(tmp_path / "s.db").lstrip("/")
    driver = ("import asyncio, os, signal, sys\n"
              "from lanemon.store.sql import open_sql_store\n"
              "from lanemon.store.url import parse\n"
              "from lanemon.store.churn import main\n"
              "async def init():\n"
              "    s = await open_sql_store(parse(sys.argv[1]), create=True)\n"
              "    await s.close()\n"
              "asyncio.run(init())\n"
              "rc = main(['--store', sys.argv[1], '--workspaces', 'a', '--cycles', '3'])\n"
              "os.kill(os.getpid(), signal.SIGTERM)\n"
              "print('alive after SIGTERM, main returned', rc, flush=True)\n"
              "# ignored, not a Python handler: those go back to the default at interpreter shutdown\n"
              "print('ignored' if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN else 'not ignored')\n")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", driver, url], capture_output=True,
                                   text=True, env=env, cwd=ROOT, timeout=TIMEOUT_S)
    assert (done.returncode, done.stdout.split("\n")[:2]) == (0, ["alive after SIGTERM, main returned 0", "ignored"]), \
        done.stderr
